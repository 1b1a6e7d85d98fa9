"""The knowledge graph: entities and typed relations read from texts by rules, kept in
SQLite beside the memories, and what the CLI shows of them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from mnemoweave import Engine
from mnemoweave.cli.main import cli
from mnemoweave.errors import NotFound
from mnemoweave.graph import build
from mnemoweave.graph.extract import extract, key


def names(text: str) -> dict[str, str]:
    return {m.name: m.kind for m in extract(text).mentions}


def relations(text: str) -> set[tuple[str, str, str]]:
    return {(r.type, r.source, r.target) for r in extract(text).relations}


# --- extraction ---------------------------------------------------------------------------


def test_code_shapes_are_entities_and_prose_is_not():
    found = names(
        "Never call `requests.put()` without a timeout: storage/client.py wraps it in "
        "UploadClient.put_part, and upload_client reads DATABASE_URL. Run `pytest -x` with "
        "--no-cov against https://minio.example.com/bucket or redis.internal:6379."
    )
    assert found == {
        "requests.put": "code",
        "storage/client.py": "file",
        "UploadClient.put_part": "code",
        "upload_client": "code",
        "DATABASE_URL": "env",
        "pytest": "software",
        "-x": "flag",
        "--no-cov": "flag",
        "https://minio.example.com/bucket": "url",
        "redis.internal:6379": "url",
    }
    assert names("Always retry the request after a timeout, then check the tests again.") == {}


def test_a_name_that_is_an_ordinary_word_counts_only_where_it_names_software():
    assert "requests" not in names("Batch the requests so the API sees fewer of them.")
    assert "requests" in names("The `requests` session is shared.")
    assert "requests" in names("We pin the requests library for the uploader.")
    assert "requests" in names("上传客户端从 requests 换成了 httpx。")


def test_chinese_names_components_and_environments():
    found = names("计费服务依赖阿里云的 OSS，张伟说预发环境的订单表要先备份。")
    assert found == {
        "计费服务": "component",
        "阿里云": "software",
        "OSS": "software",
        "张伟": "person",
        "预发环境": "environment",
        "订单表": "component",
    }


def test_a_word_no_dictionary_holds_is_a_name_and_an_ordinary_word_is_not():
    assert names("inkpress renders invoices; the old code lives in paykit-py.") == {
        "inkpress": "name",
        "paykit-py": "name",
    }
    assert names("brewmini 的短信验证码改过了。")["brewmini"] == "name"
    # English words, their forms, developers' words and prefixed words name nothing
    assert names("the webhook retries timed out, so we re-run the unbans and backfills") == {}
    assert names("Rounding must happen once.") == {}  # an ordinary first word
    assert names("Quillnote moved to Tauri.")["Quillnote"] == "name"
    assert names("Kofi says the bot never had this.")["Kofi"] == "person"  # what people do
    assert names("Tomás wants spectators.")["Tomás"] == "person"


def test_a_component_is_one_thing_of_the_project_not_a_kind_of_thing():
    # "the", "its", "our", a project's possessive: one thing; "a", "each", a number: a kind
    assert names("The upload client retries.")["upload client"] == "component"
    assert names("Hexfall's game server is built on Colyseus.")["game server"] == "component"
    assert "one-off script" not in names("Subjects were copied with a one-off script.")
    assert "dedicated server" not in names("Each dedicated server is an Agones GameServer.")
    assert "parallel streams" not in names("It throttles us above 60 parallel streams.")
    # a product's part is named by the product; a code span says which
    assert "webhook endpoint" not in names("It listens on Stripe's webhook endpoint.")
    assert "Flower dashboard" not in names("Why does the Flower dashboard show every worker?")
    assert "materialized view" not in names("It reads the `positions` materialized view.")
    # in Chinese: the subject of a clause, or a project's own part; not an object or a
    # product's part
    assert names("订单服务依赖 Stripe。")["订单服务"] == "component"
    assert names("inkpress 的渲染服务用 WeasyPrint。")["渲染服务"] == "component"
    assert "特征缓存" not in names("风控引擎用 Redis 做特征缓存。")
    assert "任务队列" not in names("清缓存会把 Redis 的任务队列一起清掉。")
    assert "network buffer" not in names("帮我看看是不是 network buffer 不够了")
    # a clause's subject is its whole noun phrase, however jieba tags its words
    assert names("规则：作业提交服务不要直接写库。") == {"作业提交服务": "component"}
    assert names("危急值通知任务 10 分钟内推送。") == {"危急值通知任务": "component"}
    assert names("更新订单服务的配置。") == {}  # an order, not a name


def test_initialisms_months_and_labels_are_not_names():
    assert names("WebSocket 用 Boost.Beast 就够了。") == {"Boost.Beast": "code"}  # a protocol
    assert names("LLVM 后端在 feature 后面。") == {"LLVM": "software"}  # a listed one is
    assert "GIS" not in names("表每晚从客户的 GIS 系统同步过来。")
    assert "Mar" not in names("Decision (Mar 2024): dedup lives in the Flink job.")
    assert "Reminder" not in names("Reminder: say so in the team channel first.")
    assert "profiler" not in names("We ran it under the profiler and found nothing.")
    assert names("the binlog, the plaintext and the payouts") == {}  # developers' words
    assert names("Shouldn't the merge keep both?") == {}


def test_commands_folders_acronyms_and_environments_written_in_prose():
    found = names("Re-ran the helm upgrade against dev, then dbt build; legacy/ is frozen.")
    assert found == {
        "helm upgrade": "command",
        "dev": "environment",
        "dbt build": "command",
        "legacy/": "file",
    }
    assert names("The gateway is an NCS-IDF project in C#.") == {  # written as ESP-IDF is
        "NCS-IDF": "name",
        "C#": "software",
    }
    assert "dev" not in names("Install it in dev mode.")
    assert names("models downstream of stg_shopify__orders") == {"stg_shopify__orders": "code"}


def test_a_code_block_is_code_and_its_output_names_nothing():
    found = names("The flash failed:\n```\nError: Unable to find bootable image\n```\nWhy?")
    assert found == {}
    assert names("```\ngo build -o /battle ./cmd/battle\n```")["-o"] == "flag"


def test_a_name_written_both_as_a_word_and_as_a_name():
    store = {"mode": "software"}  # "Mode" the product, once known, is not every "mode"
    assert extract("Is go-redis fine with cluster mode?", store).keys == ["goredis"]
    assert "mode" in extract("Sofia replaced Mode with Looker.", store).keys
    assert "Let" not in names("马骏 asked. Let's go through it.")  # an English text


def test_chinese_nicknames_and_components_ending_in_a_tool_word():
    found = names("老周说补丁加载器和关节状态滤波器都要改，小王提醒同步引擎也是。")
    assert found["老周"] == found["小王"] == "person"
    assert {"补丁加载器", "关节状态滤波器"} <= set(found)
    assert "小于" not in names("超时小于五秒。")
    assert names("渲染服务改用进程内的 WeasyPrint。") == {
        "渲染服务": "component",
        "WeasyPrint": "software",
    }


def test_one_key_for_the_ways_an_entity_is_written():
    assert (
        len(
            {
                key(n)
                for n in (
                    "UploadClient",
                    "upload_client",
                    "upload client",
                    "Upload Clients",
                    "upload-client",
                )
            }
        )
        == 1
    )
    assert key("Postgres") == key("PostgreSQL") == key("postgresql")
    assert key("k8s") == key("Kubernetes")
    assert key("requests.put()") == "requests.put"
    assert key("storage/Client.py") != key("storageclient.py")  # a path keeps its slashes


def test_typed_relations_in_both_languages():
    assert relations("We moved the thumbnail jobs off Celery to RQ last week.") == {
        ("replaced_by", "celery", "rq")
    }
    assert relations("把上传客户端从 requests 换成 httpx。") == {
        ("replaced_by", "requests", "httpx")
    }
    assert ("replaced_by", "mysql", "postgresql") in relations(
        "订单服务不用 MySQL 了，改用 PostgreSQL。"
    )
    assert relations("The billing service depends on Redis.") == {
        ("depends_on", "billingservice", "redis")
    }
    assert relations("计费服务依赖 Kafka。") == {("depends_on", "计费服务", "kafka")}
    assert relations("Pin numpy to 1.26 until the wheels catch up.") == {
        ("pinned_to", "numpy", "1.26")
    }
    assert relations("Redis 版本固定在 6.2。") == {("pinned_to", "redis", "6.2")}
    assert relations("Never call requests.put without a timeout.") == {
        ("rule_about", "", "requests.put")
    }
    assert ("rule_about", "", "alembic") in relations("禁止在 CI 里跑 alembic 迁移。")


def test_a_relation_starts_at_its_subject_not_at_an_object_or_a_place():
    # "to SQLite": an object, not the user of rusqlite
    assert relations("The engine persists updates to SQLite through rusqlite.") == set()
    assert relations("Linux 上的 webview 用的是 WebKitGTK。") == set()  # a place's thing
    assert relations("cohort 统计已经从 pandas 改用 Polars 了。") == {
        ("replaced_by", "pandas", "polars")
    }
    assert ("replaced_by", "grpc", "triton") not in relations("The ranker calls Triton over gRPC.")
    assert relations("不要在 content script 里直接调用 `fetch`。") == {("rule_about", "", "fetch")}
    assert relations("pnpm 的 `--frozen-lockfile` 在 CI 里一律要加上。") == {
        ("rule_about", "", "--frozen-lockfile")
    }


def test_a_relation_is_the_one_the_text_states():
    # a finished switch is only a replacement, code spans read as the words around them
    assert relations("The webhook client now uses OkHttp instead of `HttpURLConnection`.") == {
        ("replaced_by", "httpurlconnection", "okhttp")
    }
    assert relations("The query filters on `paid_at` instead of `created_at`.") == set()
    # a rule's object gets the rule, with no use beside it
    assert relations("Kotlin 代码一律用 ktlint 格式化。") == {("rule_about", "", "ktlint")}
    # reading an environment variable is no use; giving a variable a value no replacement
    assert relations("Nacos 地址通过 `NACOS_ADDR` 注入。") == set()
    assert relations("我把 `ASSET_HOST` 切到了 `https://static.example.cn`。") == set()
    # a means is no subject, a passive subject uses nothing, a person is no rule's object
    assert relations("媒体文件通过 `aws-sdk-s3` 写入 MinIO。") == set()
    assert relations("SuiteSparse is only touched through scikit-sparse.") == set()
    assert relations("Don't touch prod without telling 老周.") == set()
    # the problem is no source of its fix; a value compared with is no rule's object
    assert relations(
        "The crash when the location service started (ForegroundServiceException) was fixed "
        "by declaring `foregroundServiceType` in the manifest."
    ) == {("fixed_by", "locationservice", "foregroundservicetype")}
    assert relations("`ARGON2_M_COST` 禁止低于 64 MiB。") == {("rule_about", "", "argon2mcost")}
    # a place or a time a rule applies in is not what it is about
    assert relations("Android 上 Hermes 必须开启。") == {("rule_about", "", "hermes")}
    assert relations("上传器必须等 `match_end` 事件之后再传。") == {("rule_about", "", "上传器")}
    # what a thing does through something it uses; what belongs to a mention is not it
    assert relations("The eval harness uses vLLM through `VLLMWrapper`.") == set()
    assert relations("靠把 `gmv_rt_10s` 的表引擎换成 ReplacingMergeTree 修复。") == set()
    assert relations("PHP on prod is locked to 8.2.") == {("pinned_to", "php", "8.2")}


def test_a_question_or_a_proposal_states_no_relation():
    assert relations("Should we move the storefront off Vercel to Cloudflare Pages?") == set()
    assert relations("何志强问 Redis 要不要换成 KeyDB？") == set()
    assert relations("建议先把 printf 换成 LOG_INF。") == set()
    assert relations("等我们把 `grpc.Dial` 全部换成 `grpc.NewClient` 再放开。") == set()
    assert relations("需要把 `dbt-presto` 换成 `dbt-trino`。") == set()  # still to do
    assert relations("Singularity 镜像得换成 Docker 镜像。") == set()
    assert relations("The crash in `a.pyx` is fixed by `as_real`; no need to pin Cython.") == {
        ("fixed_by", "a.pyx", "asreal")
    }
    assert relations("Yusuf asked whether the gateway should move from ESP-IDF to Zephyr.") == set()
    assert relations("We moved the storefront off Vercel to Netlify.") == {
        ("replaced_by", "vercel", "netlify")
    }


def test_named_together_is_not_a_typed_relation():
    assert relations("Redis and Celery both showed up in the profile.") == set()
    assert relations("这次排查看了 Redis 和 Celery 的日志。") == set()


def test_a_text_that_writes_two_names_as_one_thing_gives_an_alias():
    found = extract("上传客户端（UploadClient）依赖 httpx。")
    assert found.aliases == (("上传客户端", "uploadclient"),)


# --- the stored graph ---------------------------------------------------------------------


def test_memories_are_read_into_entities_relations_and_a_timeline(engine):
    first = engine.remember("We moved the thumbnail jobs off Celery to RQ.", importance=3).ref
    engine.remember("The thumbnail workers must not call Celery directly any more.", importance=3)
    engine.remember("上传客户端（UploadClient）依赖 httpx。", importance=3)
    engine.remember("UploadClient retries a part three times.", importance=3)
    listed = {row["name"]: row for row in engine.entities()}
    assert listed["Celery"]["memories"] == 2
    assert listed["thumbnail jobs"]["memories"] == 1  # "workers" and "jobs" differ: no merge
    celery = engine.entity("celery")
    assert {m["id"] for m in celery["memories"]} >= {first}
    assert {"type": "replaced_by", "source": "Celery", "target": "RQ"} in [
        {k: r[k] for k in ("type", "source", "target")} for r in celery["relations"]
    ]
    # the Chinese name reaches the memories written in English through the text's alias
    client = engine.entity("上传客户端")
    assert len(client["memories"]) == 2
    assert engine.entity("upload client")["key"] == client["key"]
    assert [step["memory"] for step in client["timeline"]] == [m["id"] for m in client["memories"]]


def test_a_text_read_with_older_rules_is_read_again(engine):
    ref = int(engine.remember("Each dedicated server is an Agones GameServer.").ref[2:])

    def named() -> set[str]:
        rows = engine.db.execute(
            "SELECT e.name FROM mentions m JOIN entities e ON e.id = m.entity"
            " WHERE m.ref_table = 'memories' AND m.ref_id = ?",
            (ref,),
        )
        return {row[0] for row in rows}

    build.catch_up(engine.db)
    assert named() == {"Agones GameServer"}
    # as an older version read it: a kind of thing taken for a component
    engine.db.execute(
        "INSERT INTO entities (key, name, kind) VALUES ('dedicatedserver', 'dedicated server',"
        " 'component')"
    )
    engine.db.execute(
        "INSERT INTO mentions (entity, ref_table, ref_id, name) SELECT id, 'memories', ?,"
        " name FROM entities WHERE key = 'dedicatedserver'",
        (ref,),
    )
    engine.db.execute("UPDATE graphed SET stamp = 'older' WHERE ref_table = 'memories'")
    assert build.catch_up(engine.db) == 1
    assert named() == {"Agones GameServer"}
    assert build.catch_up(engine.db) == 0  # read with these rules: current


def test_a_superseded_memory_keeps_its_relations_as_past_and_a_trashed_one_leaves(engine):
    old = engine.remember("The upload service uses urllib3.", importance=3).ref
    new = engine.remember("The upload service uses httpx.", importance=3).ref
    build.catch_up(engine.db)
    engine.supersede(old, new)
    service = engine.entity("upload service")
    past = {m["id"]: m["past"] for m in service["memories"]}
    assert past == {old: True, new: False}
    assert {r["evidence"]: r["past"] for r in service["relations"]} == {old: True, new: False}
    engine.forget(new)
    assert [m["id"] for m in engine.entity("upload service")["memories"]] == [old]
    with pytest.raises(NotFound):
        engine.entity("httpx")  # only the trashed memory named it


def test_an_edit_is_read_again(engine):
    ref = engine.remember("The reports job uses pandas.", importance=3).ref
    assert engine.entity("pandas")
    engine.edit(ref, text="The reports job uses polars.")
    assert engine.entity("polars")["memories"][0]["id"] == ref
    with pytest.raises(NotFound, match="no entity named 'pandas'"):
        engine.entity("pandas")


def test_a_users_merge_survives_a_rebuild(engine):
    engine.remember("The billing service bills monthly.", importance=3)
    engine.remember("计费服务每月出账。", importance=3)
    merged = engine.merge_entities("billing service", "计费服务")
    assert len(merged["memories"]) == 2
    assert engine.reindex()["graphed"] == 2
    assert len(engine.entity("计费服务")["memories"]) == 2
    assert {"key": "计费服务", "origin": "user"} in engine.entity("billing service")["aliases"]


def test_turns_are_read_too_but_tool_output_is_not(engine):
    engine.ingest("s1", "user", "Why does the resize worker OOM on staging?")
    engine.ingest("s1", "tool", "Traceback: MemoryError in resize_worker.py")
    build.catch_up(engine.db)
    found = engine.entity("resize worker")
    assert [t["role"] for t in found["turns"]] == ["user"]
    with pytest.raises(NotFound):
        engine.entity("resize_worker.py")


def test_a_purged_text_leaves_no_entity_behind(engine):
    def stored() -> set[str]:  # the table itself: a graph read would catch up first
        return {name for (name,) in engine.db.execute("SELECT name FROM entities")}

    gone = engine.remember("The OrbitalCache client retries twice")
    turn = engine.ingest("s1", "user", "Is OrbitalCache still on staging?")
    engine.remember("The billing service depends on Redis")
    engine.purge(gone.id)
    assert "OrbitalCache" in stored()  # the turn still names it
    engine.purge(turn.id)
    assert "OrbitalCache" not in stored() and "billing service" in stored()


# --- the commands -------------------------------------------------------------------------


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    return lambda *args: runner.invoke(cli, list(args), catch_exceptions=False)


def test_the_entity_commands(run):
    run("remember", "We moved the thumbnail jobs off Celery to RQ.", "--global")
    run("remember", "Pin RQ to 1.16 until the worker API settles.", "--global")
    listed = run("entities")
    assert listed.exit_code == 0
    assert "RQ  [software]  2 memories" in listed.output
    shown = run("entity", "rq")
    assert shown.exit_code == 0, shown.output
    assert "RQ pinned to 1.16" in shown.output
    assert "Celery replaced by RQ" in shown.output
    data = json.loads(run("entity", "RQ", "--json").output)
    assert {n["name"] for n in data["neighbours"]} >= {"Celery"}
    missing = run("entity", "Kafka")
    assert missing.exit_code != 0
    assert "no entity named 'Kafka'" in missing.output


def test_the_graph_exports_as_json_and_linked_notes_that_import_leaves_aside(engine, tmp_path):
    engine.remember("We moved the thumbnail jobs off Celery to RQ.", importance=3, project="shop")
    engine.remember("RQ workers read REDIS_URL.", importance=3, project="shop")
    engine.remember("Celery: old notes about <b>beat</b>.", importance=3, project="shop")
    paths = engine.export(tmp_path / "out")
    graph = json.loads((tmp_path / "out" / "graph.json").read_text(encoding="utf-8"))
    rq = next(e for e in graph["entities"] if e["name"] == "RQ")
    assert len(rq["memories"]) == 2
    assert {k: graph["relations"][0][k] for k in ("type", "source", "target")} == {
        "type": "replaced_by",
        "source": "Celery",
        "target": "RQ",
    }
    note = (tmp_path / "out" / "graph" / "RQ.md").read_text(encoding="utf-8")
    assert "[[Celery]] replaced by [[RQ]]" in note
    assert "- [[REDIS_URL]] (1)" in note
    project_file = next(p for p in paths if p.name.startswith("project-"))
    assert f"in [[{project_file.stem}]]: RQ workers read REDIS_URL." in note
    other = Engine(home=tmp_path / "other")
    try:
        assert other.import_path(tmp_path / "out")["memories"] == 3  # not the notes
    finally:
        other.close()


# --- recall -------------------------------------------------------------------------------


def test_search_expands_one_hop_through_the_graph(engine):
    first = engine.remember("The thumbnail service moved off Celery to RQ.", importance=3).ref
    hop = engine.remember("RQ workers read REDIS_URL from the environment.", importance=3).ref
    engine.remember("The billing service bills on the first of the month.", importance=3)
    plain = [hit.id for hit in engine.search("why did we drop Celery?", project="")]
    assert plain == [first]
    expanded = engine.search("why did we drop Celery?", project="", expand=True)
    assert [hit.id for hit in expanded] == [first, hop]
    assert expanded[1].extra["explain"]["expanded"] == {"from": "Celery", "neighbour": "RQ"}
    assert expanded[1].score < expanded[0].score


@pytest.mark.parametrize(
    ("stored", "asked"),
    [
        ("We run Postgres 15 for the orders database.", "which PostgreSQL version do we run?"),
        ("k8s deploys go through ArgoCD, never kubectl apply.", "how do we deploy to Kubernetes?"),
        ("UploadClient retries each part three times.", "how often does the upload client retry?"),
    ],
)
def test_a_memory_naming_the_prompts_entity_another_way_is_woven(tmp_path, stored, asked):
    from mnemoweave.config import Config

    woven = {}
    for weight in (0.0, 0.3):
        with Engine(home=tmp_path / str(weight), config=Config(weight_entity=weight)) as engine:
            engine.remember(stored, importance=3, project="")
            woven[weight] = [line.ref for line in engine.weave(asked, project="").knowledge]
    assert woven[0.3] == ["m_1"]
    assert woven[0.0] == []  # without the graph, the other name says nothing


def test_a_quiet_daemon_sets_up_the_graphs_readers_once(engine, monkeypatch):
    import threading

    from mnemoweave.daemon import idle
    from mnemoweave.daemon.routes import Context
    from mnemoweave.graph import extract

    calls = []
    done = threading.Event()
    monkeypatch.setattr(extract, "prepare", lambda: (calls.append(1), done.set()))
    work = idle.IdleWork(Context(engine), enabled=False)
    work.tick(idle.PREPARE_AFTER - 1, now=1000.0)
    assert not calls  # a prompt may be on its way: not while the daemon is busy
    work.tick(idle.PREPARE_AFTER, now=1000.0)
    assert done.wait(10)
    work.tick(10 * idle.PREPARE_AFTER, now=2000.0)
    assert calls == [1] and work.thread is None  # once; consolidation stays off
