"""The conflict detector's rules (mnemoweave.learn.conflicts), on clear pairs in both languages."""

from __future__ import annotations

from mnemoweave.learn.conflicts import Verdict, detect


def test_different_numbers_on_the_same_subject_conflict():
    verdict = detect("The mail sender's retry limit is 4.", "The mail sender retry limit is 6.")
    assert verdict.kind == "conflict" and verdict
    assert "4" in verdict.reason and "6" in verdict.reason


def test_an_update_cue_in_the_new_text_makes_an_update():
    old = "Images are stored on the NFS share."
    new = "Images are now stored in S3 instead of the NFS share."
    assert detect(old, new).kind == "update"
    assert detect("请求超时 5 秒。", "请求超时改成 8 秒。").kind == "update"


def test_prohibition_against_permission_conflicts():
    assert detect("允许在测试里使用 sleep。", "测试里禁止使用 sleep。").kind == "conflict"
    verdict = detect(
        "Force-pushing to release branches is allowed.", "Never force-push to release branches."
    )
    assert verdict.kind == "conflict" and "forbids" in verdict.reason


def test_a_different_choice_for_the_same_slot_conflicts():
    assert detect("Build the docs with Sphinx.", "Build the docs with MkDocs.").kind == "conflict"


def test_more_detail_on_the_same_subject_is_compatible():
    verdict = detect("Format code with black.", "Format code with black before every commit.")
    assert verdict == Verdict(None, verdict.reason) and not verdict
    assert "compatible" in verdict.reason


def test_different_subjects_need_no_decision_even_with_different_values():
    assert not detect("The upload chunk size is 8 MB.", "The thumbnail cache holds 64 MB.")
    # the model says these are far apart, whatever words they share
    assert not detect(
        "Run the linter before each commit.", "The linter config is in setup.cfg.", 0.3
    )
    assert (
        detect("缓存过期时间 5 分钟。", "登录会话 30 分钟后过期。", 0.2).reason
        == "different subjects"
    )


def test_the_cosine_decides_the_subject_across_languages():
    zh, en = "部署脚本用 bash 写。", "Write the deploy scripts in Python."
    assert detect(zh, en, 0.62).kind == "conflict"
    assert not detect(zh, en, 0.2)
    assert not detect(zh, en)  # lexical only: no shared word across languages
