"""Per-prompt recall with the real model, as a person meets it: a store of one memory and a
direct question, the other language, unrelated prompts, a question asked before."""

import pytest

from mnemoweave.errors import InvalidInput

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


def test_by_meaning_adds_what_a_dense_search_ranks_best_beyond_the_k_best(real_engine):
    notes = [
        "deploy notes: the deploy script lives in ops/deploy.sh",
        "deploy notes: deploys need a green build first",
        "deploy notes: deploy tags are named vX.Y.Z",
        "发布窗口是每周五晚上六点，周一不发版。",
        "the cafeteria closes at 3pm on Fridays",
    ]
    for note in notes:
        real_engine.remember(note, kind="fact", project=P)
    query = "deploy notes: when is the release window?"
    best = real_engine.search(query, k=2, project=P, touch=False)
    dense = real_engine.search(query, k=3, project=P, mode="dense", touch=False)
    found = real_engine.search(query, k=2, project=P, touch=False, by_meaning=3)
    shown = {hit.id for hit in best}
    assert [h.id for h in found] == [h.id for h in best] + [
        h.id for h in dense if h.id not in shown
    ]
    assert found[2:] and all(h.extra["explain"]["mode"] == "dense" for h in found[2:])
    with pytest.raises(InvalidInput, match="by_meaning must be between"):
        real_engine.search(query, by_meaning=-1)
