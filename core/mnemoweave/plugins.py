"""Building the plugin manager: hookspecs, built-in plugins, entry-point plugins.

Every hook implementation is wrapped so that one that raises is logged, counted and
skipped (it returns None, which every hook treats as "nothing to add"): a broken plugin
never breaks a turn. `failures(pm)` gives the counts `status` reports; `registry(pm, hook)`
what a `register_*` hook registers by name, asked once per manager.
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections import Counter
from typing import Any

import pluggy

from . import hookspecs

log = logging.getLogger("mnemoweave.plugins")

BUILTIN_PLUGINS = (
    "mnemoweave.embed.default_plugin",
    "mnemoweave.classify",
    "mnemoweave.distill",
    "mnemoweave.weave",
    "mnemoweave.team.plugin",
)  # the built-in hosts join when they are first asked for (adapters.hosts)
_FAILURES = "_mnemoweave_failures"
_REGISTRIES = "_mnemoweave_registries"
_PLUGGED = "_mnemoweave_plugged"


def _isolated(impl: pluggy.HookImpl, hook_name: str, counts: Counter) -> None:
    if impl.hookwrapper or impl.wrapper:
        return  # wrappers manage the call themselves; leave them as they are
    function = impl.function

    @functools.wraps(function)
    def guarded(*args: Any) -> Any:  # pluggy passes the hook's keyword arguments in order
        try:
            return function(*args)
        except Exception:
            counts[f"{impl.plugin_name}.{hook_name}"] += 1
            log.exception("plugin %s failed in %s; skipped", impl.plugin_name, hook_name)
            return None

    guarded._mnemoweave_guard = True  # type: ignore[attr-defined]
    # pluggy types HookImpl.function as Final; replacing it is how each implementation is
    # isolated (pluggy's hook callers read it at call time)
    impl.function = guarded  # type: ignore[misc]


def _isolate_all(pm: pluggy.PluginManager) -> None:
    counts = failures(pm)
    for hook_name in dir(pm.hook):
        caller = getattr(pm.hook, hook_name)
        if not isinstance(caller, pluggy.HookCaller):
            continue
        for impl in caller.get_hookimpls():
            if not getattr(impl.function, "_mnemoweave_guard", False):
                _isolated(impl, hook_name, counts)


def failures(pm: pluggy.PluginManager) -> Counter:
    """How often each `plugin.hook` raised since the manager was built."""
    if not hasattr(pm, _FAILURES):
        setattr(pm, _FAILURES, Counter())
    return getattr(pm, _FAILURES)


def make_plugin_manager(load_entrypoints: bool = True) -> pluggy.PluginManager:
    """A fresh manager: never a module-level global, so tests and engines stay independent."""
    pm = pluggy.PluginManager("mnemoweave")
    pm.add_hookspecs(hookspecs)
    for name in BUILTIN_PLUGINS:
        pm.register(importlib.import_module(name), name=name)
    if load_entrypoints:
        pm.load_setuptools_entrypoints("mnemoweave")
    pm.check_pending()
    _isolate_all(pm)
    return pm


def register(pm: pluggy.PluginManager, plugin: object, name: str | None = None) -> None:
    """Register one more plugin after the manager was built (tests, embedding apps)."""
    pm.register(plugin, name=name)
    pm.check_pending()
    _isolate_all(pm)
    getattr(pm, _REGISTRIES, {}).clear()  # the registries are asked again


def registry(pm: pluggy.PluginManager, hook_name: str) -> dict[str, Any]:
    """What the `register_*` hook `hook_name` registers (`register(name, item)`), by name:
    asked once per manager (and again after `register` adds a plugin). A name registered
    twice keeps the later-registered plugin's item (pluggy asks later plugins first)."""
    if not hasattr(pm, _REGISTRIES):
        setattr(pm, _REGISTRIES, {})
    cache = getattr(pm, _REGISTRIES)
    if hook_name not in cache:
        found: dict[str, Any] = {}

        def add(name: str, item: Any) -> None:
            found.setdefault(name, item)

        getattr(pm.hook, hook_name)(register=add)
        cache[hook_name] = found
    return cache[hook_name]


def add_commands(cli: Any, pm: pluggy.PluginManager | None = None) -> None:
    """Let plugins add their commands to the CLI's click group (register_commands), once
    per group; `pm` defaults to a manager with the entry-point plugins."""
    if getattr(cli, _PLUGGED, False):
        return
    setattr(cli, _PLUGGED, True)
    (pm or make_plugin_manager()).hook.register_commands(cli=cli)
