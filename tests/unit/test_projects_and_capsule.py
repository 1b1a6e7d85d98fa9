from mnemoweave.capture import capsule
from mnemoweave.model import Turn
from mnemoweave.projects import normalise_project, project_from_cwd


def test_project_is_the_git_root_or_the_dir(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "pkg").mkdir(parents=True)
    assert project_from_cwd(str(repo / "src" / "pkg")) == str(repo)
    worktree = tmp_path / "wt"
    (worktree / "sub").mkdir(parents=True)
    (worktree / ".git").write_text("gitdir: /elsewhere\n")  # a linked worktree
    assert project_from_cwd(str(worktree / "sub")) == str(worktree)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert project_from_cwd(str(plain) + "/") == str(plain)
    assert project_from_cwd("") == project_from_cwd("relative/dir") == ""


def test_project_names_are_normalised_not_paths():
    assert normalise_project("/a/b/../c/") == "/a/c"
    assert normalise_project("C:\\Users\\me\\repo") == "C:/Users/me/repo"
    assert normalise_project("/x\x00/y\n") == "/x/y"
    assert normalise_project("../../etc") == "../../etc"  # a name, kept as text, never opened


def turn(ref, role, text, kind):
    return Turn("s", role, text, id=ref, kind=kind)


def test_capsule_rolls_goal_decisions_and_open_threads():
    recap = capsule.empty()
    recap = capsule.update(recap, turn("t_1", "user", "hi", "chat"))
    assert recap["goal"] is None and recap["open"] == []  # a greeting is no thread
    recap = capsule.update(
        recap, turn("t_2", "user", "can you look at why the uploader hangs on big files", "chat")
    )
    assert recap["goal"]["ref"] == "t_2"  # first substantial user turn
    recap = capsule.update(
        recap, turn("t_3", "assistant", "The hang was httpx without a timeout.", "conclusion")
    )
    assert recap["open"] == [] and [d["ref"] for d in recap["decisions"]] == ["t_3"]
    recap = capsule.update(recap, turn("t_4", "user", "帮我把上传模块改成异步的", "mission"))
    assert recap["goal"]["ref"] == "t_4"  # a mission replaces a plain first turn
    recap = capsule.update(recap, turn("t_5", "user", "and add tests", "mission"))
    assert recap["goal"]["ref"] == "t_4"  # but not a later mission
    assert recap["turns"] == 5 and [o["ref"] for o in recap["open"]] == ["t_4", "t_5"]
    assert capsule.without(recap, "t_4")["goal"] is None


def test_a_statement_is_neither_the_goal_nor_an_open_request():
    recap = capsule.empty()
    pitfall = "Pitfall we hit today: RQ workers abort after fork on macOS, set the env var"
    recap = capsule.update(recap, turn("t_1", "user", pitfall, "conclusion"))
    recap = capsule.update(
        recap, turn("t_2", "user", "以后 commit message 都用英文写，记住了", "pref")
    )
    assert recap["goal"] is None and recap["open"] == []
    assert [d["ref"] for d in recap["decisions"]] == ["t_1"] and recap["rules"][0]["ref"] == "t_2"
    recap = capsule.update(
        recap, turn("t_3", "user", "now make the worker start script use it", "chat")
    )
    assert recap["goal"]["ref"] == "t_3" and [o["ref"] for o in recap["open"]] == ["t_3"]
    recap = capsule.update(recap, turn("t_4", "assistant", "Done.", "chat"))
    assert recap["open"] == []  # answered


def test_a_pitfall_or_rule_the_classifier_takes_for_a_task_is_never_the_goal():
    recap = capsule.empty()
    pitfall = (
        "Pitfall we hit today: the Docker build in GitHub Actions takes 14 minutes "
        "because the cache never hits."
    )
    recap = capsule.update(recap, turn("t_1", "user", pitfall, "mission"))
    recap = capsule.update(recap, turn("t_2", "user", "另外，日志里不要打印 token。", "chat"))
    assert recap["goal"] is None and recap["open"] == []
    assert [d["ref"] for d in recap["decisions"]] == ["t_1"]
    assert [r["ref"] for r in recap["rules"]] == ["t_2"]
