"""Retail: customers, products, stores and orders behind 100+ near-duplicate dashboard endpoints (SEL-BIRD-style)."""

from __future__ import annotations

import random

from data.build._names import CITIES, FIRST_NAMES, LAST_NAMES
from data.build._toolkit import Domain, Table, endpoint, retriever, slot_family, write

CATEGORIES = ["audio", "books", "camping", "coffee", "footwear", "kitchen", "toys", "gaming"]
BRANDS = ["Northwind", "Aurora", "Kestrel", "Bluefin", "Tidewater", "Summit"]
PRODUCT_WORDS = {
    "audio": ["Headphones", "Speaker", "Earbuds", "Soundbar"],
    "books": ["Atlas", "Cookbook", "Novel", "Field Guide"],
    "camping": ["Tent", "Lantern", "Sleeping Bag", "Stove"],
    "coffee": ["Grinder", "Espresso Beans", "Kettle", "French Press"],
    "footwear": ["Trail Shoes", "Sandals", "Boots", "Sneakers"],
    "kitchen": ["Skillet", "Knife Set", "Blender", "Cutting Board"],
    "toys": ["Puzzle", "Kite", "Building Set", "Robot Kit"],
    "gaming": ["Controller", "Headset", "Keyboard", "Mouse"],
}
REGIONS = {"north": ["Leeds", "Bergen", "Tampere"], "south": ["Seville", "Valencia", "Perth"], "east": ["Osaka", "Kyoto"], "west": ["Lisbon", "Porto"]}
STATUSES = ["placed", "shipped", "delivered", "cancelled", "returned"]
TIERS = ["bronze", "silver", "gold"]
MONTHS = [f"2025-{m:02d}" for m in range(1, 13)]


def build(rng: random.Random) -> Domain:
    customers = []
    for i in range(1, 121):
        customers.append(
            (
                f"C{i:03d}",
                f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}",
                rng.choice(CITIES[:12]),
                rng.choice(TIERS),
                rng.randint(0, 40) * 25,
                rng.randint(2016, 2025),
            )
        )
    products = []
    pid = 1
    for cat in CATEGORIES:
        for word in PRODUCT_WORDS[cat]:
            for brand in rng.sample(BRANDS, 2):
                price = round(rng.uniform(8, 320), 2)
                products.append((f"P{pid:03d}", f"{brand} {word}", cat, brand, price, rng.randint(0, 150)))
                pid += 1
    stores = []
    sid = 1
    for region, cities in sorted(REGIONS.items()):
        for city in cities:
            stores.append((f"S{sid:02d}", city, region, f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"))
            sid += 1
    orders, items = [], []
    for i in range(1, 401):
        oid = f"O{i:04d}"
        chosen = rng.sample(products, rng.randint(1, 3))
        lines = [(oid, p[0], rng.randint(1, 4), p[4]) for p in chosen]
        total = round(sum(q * u for _, _, q, u in lines), 2)
        month = rng.choice(MONTHS)
        orders.append(
            (
                oid,
                rng.choice(customers)[0],
                rng.choice(stores)[0],
                f"{month}-{rng.randint(1, 28):02d}",
                month,
                rng.choices(STATUSES, weights=[3, 3, 8, 1, 1])[0],
                rng.choice(["online", "in_store"]),
                total,
            )
        )
        items.extend(lines)
    tables = [
        Table(
            "customers",
            "CREATE TABLE customers (customer_id TEXT PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL, tier TEXT NOT NULL, loyalty_points INTEGER NOT NULL, signup_year INTEGER NOT NULL)",
            customers,
        ),
        Table(
            "products",
            "CREATE TABLE products (product_id TEXT PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, brand TEXT NOT NULL, price REAL NOT NULL, stock INTEGER NOT NULL)",
            products,
        ),
        Table("stores", "CREATE TABLE stores (store_id TEXT PRIMARY KEY, city TEXT NOT NULL, region TEXT NOT NULL, manager TEXT NOT NULL)", stores),
        Table(
            "orders",
            "CREATE TABLE orders (order_id TEXT PRIMARY KEY, customer_id TEXT NOT NULL, store_id TEXT NOT NULL, order_date TEXT NOT NULL, order_month TEXT NOT NULL, status TEXT NOT NULL, channel TEXT NOT NULL, total REAL NOT NULL)",
            orders,
        ),
        Table(
            "order_items",
            "CREATE TABLE order_items (order_id TEXT NOT NULL, product_id TEXT NOT NULL, quantity INTEGER NOT NULL, unit_price REAL NOT NULL)",
            items,
        ),
    ]
    pk = {"customers": "customer_id", "products": "product_id", "stores": "store_id", "orders": "order_id"}
    singular = {"customers": "customer", "products": "product", "stores": "store", "orders": "order"}
    filters = {
        "customers": {"city": str, "tier": str, "signup_year": int},
        "products": {"category": str, "brand": str},
        "stores": {"city": str, "region": str},
        "orders": {"customer_id": str, "store_id": str, "status": str, "channel": str, "order_month": str},
        "order_items": {"order_id": str, "product_id": str},
    }
    limit_p = (int, "Maximum rows to return.", {"default": 50, "minimum": 1, "maximum": 200})
    tools = slot_family(sorted(t.name for t in tables)) + [
        retriever("search_store_policies", "Search the store policy handbook (returns, shipping, loyalty, warranties).")
    ]
    for table, cols in filters.items():
        order_by = pk.get(table, "rowid")
        for col, kind in cols.items():
            label = col.replace("_", " ")
            tools.append(
                endpoint(
                    f"list_{table}_by_{col}",
                    f"List {table.replace('_', ' ')} with a given {label}.",
                    {col: (kind, f"The {label} to match."), "limit": limit_p},
                    f"SELECT * FROM {table} WHERE {col} = :{col} ORDER BY {order_by} LIMIT :limit",
                    required=[col],
                )
            )
            tools.append(
                endpoint(
                    f"count_{table}_by_{col}",
                    f"Count {table.replace('_', ' ')} with a given {label}.",
                    {col: (kind, f"The {label} to match.")},
                    f"SELECT COUNT(*) AS count FROM {table} WHERE {col} = :{col}",
                    "row",
                )
            )
            if table == "orders":
                tools.append(
                    endpoint(
                        f"find_orders_by_{col}",
                        f"Find orders by {label} (dashboard search).",
                        {col: (kind, f"The {label} to match."), "limit": limit_p},
                        f"SELECT * FROM orders WHERE {col} = :{col} ORDER BY order_id LIMIT :limit",
                        required=[col],
                        alias_of=f"list_orders_by_{col}",
                    )
                )
    for table, key in pk.items():
        one = singular[table]
        sql = f"SELECT * FROM {table} WHERE {key} = :{key}"
        tools.append(endpoint(f"get_{one}_details", f"Full record of one {one}.", {key: (str, f"The {one} id.")}, sql, "row"))
        tools.append(endpoint(f"lookup_{one}", f"Look up a {one} record by id.", {key: (str, f"The {one} id.")}, sql, "row", alias_of=f"get_{one}_details"))
    metric_sql = {"total_revenue": "ROUND(SUM(o.total), 2)", "average_order_value": "ROUND(AVG(o.total), 2)", "max_order_total": "MAX(o.total)"}
    group_cols = {
        "customer_id": "o.customer_id",
        "store_id": "o.store_id",
        "status": "o.status",
        "channel": "o.channel",
        "order_month": "o.order_month",
        "customer_city": "c.city",
        "customer_tier": "c.tier",
        "store_region": "s.region",
        "store_city": "s.city",
    }
    for metric, expr in metric_sql.items():
        for col, column_expr in group_cols.items():
            label = col.replace("_", " ")
            tools.append(
                endpoint(
                    f"{metric}_by_{col}",
                    f"{metric.replace('_', ' ').capitalize()} of orders for one {label}.",
                    {col: (str, f"The {label}.")},
                    f"SELECT {expr} AS value FROM orders o JOIN customers c ON c.customer_id = o.customer_id JOIN stores s ON s.store_id = o.store_id WHERE {column_expr} = :{col}",
                    "value",
                )
            )
    for cat in CATEGORIES:
        tools.append(
            endpoint(
                f"top_selling_{cat}_products",
                f"Best-selling {cat} products by units sold.",
                {"limit": (int, "How many.", {"default": 3, "minimum": 1, "maximum": 20})},
                f"SELECT p.product_id, p.name, SUM(i.quantity) AS units FROM order_items i JOIN products p ON p.product_id = i.product_id WHERE p.category = '{cat}' GROUP BY p.product_id ORDER BY units DESC, p.product_id LIMIT :limit",
                required=[],
            )
        )
        tools.append(
            endpoint(
                f"cheapest_{cat}_products",
                f"Cheapest {cat} products.",
                {"limit": (int, "How many.", {"default": 3, "minimum": 1, "maximum": 20})},
                f"SELECT product_id, name, price FROM products WHERE category = '{cat}' ORDER BY price, product_id LIMIT :limit",
                required=[],
            )
        )
        tools.append(
            endpoint(
                f"{cat}_stock_level",
                f"Total units in stock for the {cat} category.",
                {},
                f"SELECT SUM(stock) AS units_in_stock FROM products WHERE category = '{cat}'",
                "row",
            )
        )
    for region in sorted(REGIONS):
        tools.append(
            endpoint(
                f"{region}_region_sales_summary",
                f"Order count and revenue for stores in the {region} region.",
                {},
                f"SELECT COUNT(*) AS orders, ROUND(SUM(o.total), 2) AS revenue FROM orders o JOIN stores s ON s.store_id = o.store_id WHERE s.region = '{region}'",
                "row",
            )
        )
    tools += [
        write(
            "update_order_status",
            "Set the status of an order.",
            {"order_id": (str, "Order id."), "status": (str, "New status.", {"enum": STATUSES})},
            ["UPDATE orders SET status = :status WHERE order_id = :order_id"],
            precheck=("SELECT 1 FROM orders WHERE order_id = :order_id", "order {order_id} not found"),
            result_sql="SELECT order_id, status FROM orders WHERE order_id = :order_id",
        ),
        write(
            "cancel_order",
            "Cancel an order that has not shipped yet.",
            {"order_id": (str, "Order id.")},
            ["UPDATE orders SET status = 'cancelled' WHERE order_id = :order_id"],
            precheck=(
                "SELECT 1 FROM orders WHERE order_id = :order_id AND status = 'placed'",
                "order {order_id} cannot be cancelled (not found or already shipped)",
            ),
            result_sql="SELECT order_id, status FROM orders WHERE order_id = :order_id",
        ),
        write(
            "restock_product",
            "Add units to a product's stock.",
            {"product_id": (str, "Product id."), "quantity": (int, "Units to add.", {"minimum": 1})},
            ["UPDATE products SET stock = stock + :quantity WHERE product_id = :product_id"],
            precheck=("SELECT 1 FROM products WHERE product_id = :product_id", "product {product_id} not found"),
            result_sql="SELECT product_id, stock FROM products WHERE product_id = :product_id",
        ),
        write(
            "add_loyalty_points",
            "Credit loyalty points to a customer.",
            {"customer_id": (str, "Customer id."), "points": (int, "Points to add.", {"minimum": 1})},
            ["UPDATE customers SET loyalty_points = loyalty_points + :points WHERE customer_id = :customer_id"],
            precheck=("SELECT 1 FROM customers WHERE customer_id = :customer_id", "customer {customer_id} not found"),
            result_sql="SELECT customer_id, loyalty_points FROM customers WHERE customer_id = :customer_id",
        ),
    ]
    docs = []
    policy = [
        ("returns", "Return window", "Items can be returned within 30 days of delivery with a receipt; opened audio products have a 14-day window."),
        ("refunds", "Refund timing", "Refunds are issued to the original payment method within 5 business days after the return is received."),
        ("shipping", "Standard shipping", "Standard shipping is free for orders over 50 dollars and takes 3 to 5 business days."),
        ("express", "Express shipping", "Express shipping costs 12 dollars and delivers within 1 business day in all regions."),
        ("loyalty", "Loyalty tiers", "Customers reach silver tier at 500 loyalty points and gold tier at 1000 points; gold members get free express shipping."),
        ("points", "Earning points", "Members earn 2 loyalty points per dollar spent in store and 1 point per dollar online."),
        ("warranty", "Warranty", "Electronics carry a 2-year manufacturer warranty; camping gear carries a 1-year warranty."),
        ("price-match", "Price match", "We match a competitor's advertised price within 7 days of purchase."),
        ("gift-cards", "Gift cards", "Gift cards never expire and cannot be exchanged for cash."),
        ("cancellation", "Order cancellation", "An order can be cancelled free of charge until it ships; shipped orders must be returned instead."),
        ("damaged", "Damaged items", "Report damaged items within 48 hours of delivery with a photo for a free replacement."),
        ("pickup", "Store pickup", "Online orders can be picked up in any store after 2 hours; pickup orders are held for 10 days."),
    ]
    for key, title, text in policy:
        docs.append({"doc_id": f"policy-{key}", "title": title, "text": text})
    for store in stores:
        docs.append(
            {
                "doc_id": f"store-{store[0]}",
                "title": f"Store {store[0]} in {store[1]}",
                "text": f"Store {store[0]} in {store[1]} ({store[2]} region) is managed by {store[3]} and opens at {rng.choice([8, 9, 10])} am on weekdays.",
            }
        )
    facts = {
        "customers": customers,
        "products": products,
        "stores": stores,
        "orders": orders,
        "filters": filters,
        "categories": CATEGORIES,
        "regions": sorted(REGIONS),
        "statuses": STATUSES,
        "doc_facts": [
            ("How many days do I have to return an item?", "30", "search_store_policies", "return window days"),
            ("How many loyalty points does gold tier require?", "1000", "search_store_policies", "gold tier loyalty points"),
            ("How much does express shipping cost in dollars?", "12", "search_store_policies", "express shipping cost"),
            ("How long are pickup orders held, in days?", "10", "search_store_policies", "pickup orders held days"),
            ("How long is the warranty on camping gear, in years?", "1", "search_store_policies", "camping gear warranty"),
        ],
    }
    return Domain("retail", tables, tools, docs, facts)
