"""BM25 retrieval with a tokenizer that also handles Chinese."""

from __future__ import annotations

from pipelines.env import BM25Index, load_environment, tokenize


def test_tokenizer_splits_words_and_segments_chinese():
    tokens = tokenize("Zephyr Air 经济舱行李额度 23kg!")
    assert tokens[:2] == ["zephyr", "air"]
    assert "经济舱" in tokens and "行李" in tokens and "23kg" in tokens
    assert "!" not in tokens


def test_chinese_query_finds_chinese_passage():
    env = load_environment("flights")
    hits = env.search_documents("泽风航空经济舱托运行李多少公斤", 3)
    assert hits[0]["doc_id"] == "zh-bag-zf"
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


def test_english_top_k_and_no_match():
    env = load_environment("olympics")
    hits = env.search_documents("marathon distance fixed", 2)
    assert len(hits) == 2 and hits[0]["doc_id"] == "note-marathon"
    assert env.search_documents("zzzz qqqq", 3) == []


def test_ties_break_by_position_deterministically():
    index = BM25Index(["same words here", "same words here", "other"])
    assert [h.index for h in index.search("same words", 3)] == [0, 1]


def test_retriever_tool_is_rag_source_and_checks_k():
    env = load_environment("hospital")
    spec = env.tool("search_patient_leaflets")
    assert spec.source == "rag" and spec.side_effect == "read"
    s = env.session()
    assert s.execute("search_patient_leaflets", {"query": "parking", "k": 1}).result[0]["doc_id"] == "leaflet-parking"
    assert not s.execute("search_patient_leaflets", {"query": "parking", "k": 50}).ok


def test_tool_shortlist_finds_the_family():
    env = load_environment("retail")
    names = [t.name for t in env.shortlist("count orders by status", 5)]
    assert "count_orders_by_status" in names
