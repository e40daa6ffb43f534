"""Every part of the cache key (issue #16.1): a change to any of them is another request, so a second model or
setting sharing a cache directory is asked, never answered with the first one's answers. What must not change
the key (the file a medium came from, accounting labels, the timeout) is checked too."""

from __future__ import annotations

import dataclasses

import pytest

from rescue.llm import (
    ChatRequest,
    GenerationSettings,
    ImagePart,
    Message,
    OpenAIModel,
    ResponseCache,
    TextPart,
    VideoPart,
)
from rescue.llm._providers import Endpoint
from rescue.llm._reliable import ReliableModel
from rescue.llm._resolve import LocalModel

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
MP4 = b"\x00\x00\x00\x18ftypmp42" + bytes(range(64))
URL = "http://127.0.0.1:9/v1"


def _key(*, url: str = URL, model_id: str = "model-a", settings: GenerationSettings | None = None,
         request: ChatRequest | None = None, cache: ResponseCache) -> str:
    inner = OpenAIModel(Endpoint("spec", model_id, url, None), settings or GenerationSettings())
    key = ReliableModel(inner, cache=cache).key(request or _text_request())
    assert key is not None
    return key


def _text_request(text: str = "Which label?", **fields) -> ChatRequest:
    return ChatRequest([Message("system", "Answer in JSON."), Message("user", text)], max_tokens=100, **fields)


def _media_request(image: ImagePart | None = None, video: VideoPart | None = None) -> ChatRequest:
    return ChatRequest([Message("user", [TextPart("Who speaks?"), image or ImagePart(PNG), video or VideoPart(MP4)])],
                       max_tokens=100)


@pytest.fixture()
def cache(tmp_path):
    store = ResponseCache(tmp_path / "cache.sqlite")
    yield store
    store.close()


SETTING_CHANGES = {
    "temperature": 0.7,
    "max_tokens": 64,
    "json_mode": False,
    "extra_body": {"enable_thinking": False},
    "seed": 7,
}


def test_every_part_of_the_key_changes_it(cache):
    base = _key(cache=cache)
    assert base == _key(cache=cache)  # deterministic
    variants = {
        "endpoint": _key(url="http://127.0.0.1:10/v1", cache=cache),
        "model id": _key(model_id="model-b", cache=cache),
        "message text": _key(request=_text_request("Which label? "), cache=cache),
        "message role": _key(request=ChatRequest([Message("user", "Answer in JSON."), Message("user", "Which label?")],
                                                 max_tokens=100), cache=cache),
        "message order": _key(request=ChatRequest([Message("user", "Which label?"), Message("system", "Answer in JSON.")],
                                                  max_tokens=100), cache=cache),
        "request max_tokens": _key(request=ChatRequest(_text_request().messages, max_tokens=101), cache=cache),
        "request temperature": _key(request=_text_request(temperature=0.3), cache=cache),
        "request seed": _key(request=_text_request(seed=3), cache=cache),
    }
    for name, value in SETTING_CHANGES.items():
        variants[f"setting {name}"] = _key(settings=GenerationSettings(**{name: value}), cache=cache)
    assert set(SETTING_CHANGES) == set(GenerationSettings().key_fields())  # no setting of the key is left out
    keys = [base, *variants.values()]
    assert len(set(keys)) == len(keys), [n for n, k in variants.items() if k == base or list(variants.values()).count(k) > 1]
    # A request's own setting is keyed as what is sent: the same as the model's setting of that value.
    assert _key(request=_text_request(json_mode=False), cache=cache) == variants["setting json_mode"]
    assert _key(request=_text_request(seed=7), cache=cache) == variants["setting seed"]


def test_media_is_keyed_by_content_not_by_path(cache, tmp_path):
    first, second = tmp_path / "a.png", tmp_path / "elsewhere" / "b.png"
    second.parent.mkdir()
    first.write_bytes(PNG)
    second.write_bytes(PNG)
    clip_a, clip_b = tmp_path / "a.mp4", tmp_path / "elsewhere" / "b.mp4"
    clip_a.write_bytes(MP4)
    clip_b.write_bytes(MP4)
    base = _key(request=_media_request(ImagePart.from_file(first), VideoPart.from_file(clip_a)), cache=cache)
    assert base == _key(request=_media_request(ImagePart.from_file(second), VideoPart.from_file(clip_b)), cache=cache)
    assert base == _key(request=_media_request(), cache=cache)  # from bytes: the same content
    changed = {
        "image bytes": _media_request(ImagePart(PNG + b"\x00")),
        "image mime": _media_request(ImagePart(PNG, mime="image/jpeg")),
        "image detail": _media_request(ImagePart(PNG, detail="low")),
        "video bytes": _media_request(video=VideoPart(MP4[:-1])),
        "video mime": _media_request(video=VideoPart(MP4, mime="video/webm")),
        "parts order": ChatRequest([Message("user", [ImagePart(PNG), TextPart("Who speaks?"), VideoPart(MP4)])],
                                   max_tokens=100),
    }
    keys = {name: _key(request=request, cache=cache) for name, request in changed.items()}
    assert base not in keys.values() and len(set(keys.values())) == len(keys)


def test_labels_and_transport_settings_are_not_part_of_the_key(cache):
    base = _key(cache=cache)
    assert base == _key(request=_text_request(purpose="judge", tag="itp", ids=("x#row1",)), cache=cache)
    assert base == _key(settings=GenerationSettings(timeout=3.0, max_answer_bytes=10), cache=cache)
    # Dict messages in the API's form are the same request as Message objects.
    as_dicts = ChatRequest([{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "Which label?"}],
                           max_tokens=100)
    assert base == _key(request=as_dicts, cache=cache)


def test_the_local_model_keys_on_its_name_not_its_port(cache):
    settings = GenerationSettings()
    local = ReliableModel(LocalModel("smollm2", settings), cache=cache)
    other = ReliableModel(LocalModel("smollm2", dataclasses.replace(settings, temperature=0.5)), cache=cache)
    assert local.key(_text_request()) != other.key(_text_request())
    assert local.key(_text_request()) != _key(cache=cache)


def test_a_model_without_identity_is_never_cached(cache):
    from rescue.llm import ModelBase

    assert ReliableModel(ModelBase(), cache=cache).key(_text_request()) is None


def test_a_provider_without_seeds_is_sent_none_and_none_is_keyed():
    # #46 item 3: a seed goes where the provider takes one; DeepSeek's, Moonshot's and MiniMax's APIs document none.
    from _engine_support import complete_all

    from rescue.llm import ChatRequest, resolve_model
    from rescue.testing.openai_server import Reply, serve

    with serve(Reply.text("ok")) as server:
        for spec, takes in (("deepseek/deepseek-chat", False), ("minimax/m", False), ("kimi/k", False),
                            ("openai/gpt-4o-mini", True), ("any-served-model", True)):
            model = resolve_model(spec, base_url=server.base_url, seed=5, api_key_env="RESCUE_TEST_NO_KEY")
            assert model.takes_seed is takes, spec
            assert model.cache_settings()["seed"] == (5 if takes else None), spec
            asked = server.request_count
            complete_all(model, [ChatRequest([{"role": "user", "content": "hi"}], max_tokens=5),
                                 ChatRequest([{"role": "user", "content": "hi"}], max_tokens=5, seed=7)])
            assert sorted(str(b.get("seed")) for b in server.bodies[asked:]) == (
                ["5", "7"] if takes else ["None", "None"]), spec
