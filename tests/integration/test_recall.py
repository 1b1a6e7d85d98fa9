"""Per-prompt recall with the real model, as a person meets it: a store of one memory and a
direct question, the other language, unrelated prompts, a question asked before."""

import pytest

P = "github.com/acme/shop"
OFF_TOPIC = ("write a haiku about autumn", "what is 17 times 23?", "今天天气怎么样？")


@pytest.mark.parametrize(
    ("memory", "kind", "prompts"),
    [
        (
            "The team's deploy window is Friday 18:00, never on Mondays.",
            "conclusion",
            ("When is our deploy window", "我们的部署窗口是什么时候？"),
        ),
        (
            "踩坑：上传大文件到 MinIO 时 presigned URL 15 分钟就过期，403 不要重试，要刷新 URL。",
            "conclusion",
            ("presigned URL 多久过期？", "large uploads to MinIO fail with 403, should we retry?"),
        ),
    ],
)
def test_a_store_of_one_memory_answers_a_direct_question_in_either_language(
    real_engine, memory, kind, prompts
):
    ref = real_engine.remember(memory, kind=kind, project=P).id
    for prompt in prompts:
        woven = real_engine.weave(prompt, project=P)
        assert [line.ref for line in woven.knowledge] == [ref], prompt
    for prompt in OFF_TOPIC:
        assert real_engine.weave(prompt, project=P).knowledge == (), prompt


def test_a_question_asked_before_brings_its_answer_not_itself(real_engine):
    question = "how do I regenerate the OpenAPI client for the web app?"
    real_engine.ingest("before", "user", question, project=P)
    answer = real_engine.ingest(
        "before",
        "assistant",
        "Run `pnpm gen:api` in apps/web: it reads openapi/spec.yaml and writes src/api/generated/.",
        project=P,
    ).id
    real_engine.ingest("before", "user", "add it to the prebuild script", project=P)
    real_engine.ingest("before", "assistant", "Added.", project=P)
    woven = real_engine.weave(
        "How do I regenerate the OpenAPI client for the web app again?", project=P
    )
    assert [(line.ref, line.also) for line in woven.knowledge] == [(answer, ())]
    assert all("regenerate" not in line.text for line in woven.knowledge)
