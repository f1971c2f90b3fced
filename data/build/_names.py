"""Realistic name and place lists the generators draw from (written for this project)."""

FIRST_NAMES = [
    "Amara", "Lukas", "Sofia", "Kenji", "Fatima", "Mateo", "Ingrid", "Tariq", "Chloe", "Ravi",
    "Elena", "Jonas", "Aisha", "Diego", "Hana", "Oliver", "Priya", "Mikhail", "Zara", "Tomas",
    "Lena", "Samuel", "Yuki", "Noah", "Camila", "Arjun", "Freya", "Omar", "Mei", "Hugo",
    "Nadia", "Felix", "Grace", "Rafael", "Ines", "Kwame", "Leila", "Anton", "Maya", "Ethan",
    "Sara", "Marco", "Ayumi", "Daniel", "Olga", "Pedro", "Nora", "Victor", "Wei", "Julia",
]
LAST_NAMES = [
    "Okafor", "Schmidt", "Rossi", "Tanaka", "Haddad", "Garcia", "Larsen", "Rahman", "Dubois", "Sharma",
    "Petrova", "Becker", "Bello", "Fernandez", "Sato", "Wright", "Iyer", "Volkov", "Khan", "Novak",
    "Meyer", "Mensah", "Kobayashi", "Walker", "Silva", "Patel", "Nilsson", "Farouk", "Chen", "Laurent",
    "Ivanova", "Weber", "Kim", "Costa", "Moreau", "Asante", "Nasser", "Horvat", "Cohen", "Brooks",
    "Lindqvist", "Conti", "Mori", "Jensen", "Sokolova", "Alves", "Berg", "Castillo", "Zhang", "Fischer",
]
COUNTRIES = [
    "Kenya", "Germany", "Italy", "Japan", "Brazil", "Norway", "India", "France", "Canada", "Australia",
    "Spain", "Jamaica", "China", "Netherlands", "Ethiopia", "Sweden", "South Korea", "Mexico",
]
CITIES = [
    "Lisbon", "Lyon", "Denver", "Osaka", "Porto", "Leeds", "Austin", "Turin", "Malmo", "Calgary",
    "Perth", "Seville", "Utrecht", "Kyoto", "Graz", "Bergen", "Tampere", "Valencia",
]
STREET_WORDS = ["Oak", "Harbor", "Mill", "River", "Station", "Garden", "Market", "Castle", "Hill", "Lake"]
