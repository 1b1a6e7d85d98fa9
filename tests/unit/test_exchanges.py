"""What the weave shows of earlier sessions: exchanges, never echoes; and what a reviewed
memory changes about it (exchanges.py, weave.py)."""

from mnemoweave.recall.exchanges import asks, echoes
from mnemoweave.text import bare

P = "/srv/uploader"


def knowledge(woven):
    return [(line.ref, line.also) for line in woven.knowledge]


def test_echoes_are_the_prompts_own_earlier_copies():
    prompt = "How do I regenerate the OpenAPI client for the web app again?"
    assert echoes("How do I regenerate the OpenAPI client for the web app?", prompt)
    assert echoes("how do i regenerate the openapi client for the web app again", prompt)
    # a turn that says more than the prompt is not its copy
    assert not echoes("The OpenAPI client is regenerated with pnpm gen:api in apps/web", prompt)
    assert not echoes("regenerate", prompt)  # nor one that says much less


def test_bare_replies_and_questions():
    assert all(bare(text) for text in ("Done.", "OK", "好的。", "Will do!", "thanks"))
    assert not bare("Done: the client now sets a 10 second timeout.")
    row = {"kind": "chat", "text": ""}
    assert asks(row | {"text": "what's the multipart chunk size right now"})
    assert asks(row | {"text": "本地 redis 是哪个端口来着？"})
    assert asks(row | {"text": "worker 的任务超时现在是多少"})
    assert asks({"kind": "mission", "text": "migrate the uploader to httpx this week"})
    assert not asks(row | {"text": "the build uses ninja, I think"})


def test_a_past_question_comes_with_its_answer_and_never_alone(engine):
    asked = engine.ingest("old", "user", "what's the multipart chunk size right now", project=P).id
    answer = engine.ingest(
        "old", "assistant", "UPLOAD_CHUNK_MB in settings.py, default 8: parts are 8 MiB.", project=P
    ).id
    engine.ingest("unanswered", "user", "what's the upload chunk limit on minio", project=P)
    woven = engine.weave("multipart chunk size of uploads", session="new", project=P)
    assert knowledge(woven) == [(asked, (answer,))]
    (line,) = woven.knowledge
    assert (
        line.text.startswith("user: what's the multipart")
        and "assistant: UPLOAD_CHUNK_MB" in line.text
    )


def test_the_prompts_earlier_copy_gives_only_its_answer_and_a_bare_reply_nothing(engine):
    question = "how do i run just the storage tests"
    engine.ingest("old", "user", question, project=P)
    answer = engine.ingest(
        "old", "assistant", 'Run pytest tests/storage -m "not minio" for the fast ones.', project=P
    ).id
    engine.ingest("old2", "user", "how do i run just the storage tests please", project=P)
    engine.ingest("old2", "assistant", "Done.", project=P)
    woven = engine.weave(question, session="new", project=P)
    assert knowledge(woven) == [(answer, ())]  # the answer, never the question itself
    assert all(question not in line.text for line in woven.knowledge)


def test_a_memory_stands_in_for_its_evidence_and_an_edit_reaches_the_session(engine):
    said = engine.ingest(
        "old",
        "user",
        "oh and btw, never retry a 403 from minio, the presigned url expired",
        project=P,
    ).id
    engine.ingest("old", "assistant", "Got it: refresh the URLs instead of retrying.", project=P)
    memory = engine.remember(
        "Never retry a MinIO 403: the presigned URL expired; refresh it instead.",
        kind="conclusion",
        project=P,
        evidence=[said],
    ).id
    woven = engine.weave(
        "minio returned 403 on a part, retry it?", session="s", project=P, record=True
    )
    shown = [ref for ref, _ in knowledge(woven)] + [
        r for lines in woven.tiers.values() for x in lines for r in (x.ref, *x.also)
    ]
    assert memory in shown and said not in shown  # the memory, never its raw turn
    engine.edit(memory, text="Never retry a MinIO 403; call the refresh endpoint for new URLs.")
    after = engine.weave("what about uploads", session="s", project=P, record=True)
    (line,) = after.knowledge
    assert line.ref == memory and "refresh endpoint" in line.text and line.label.endswith("edited")
    assert engine.weave("what about uploads", session="s", project=P).knowledge == ()
