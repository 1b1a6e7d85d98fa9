"""The plugin manager: hookspecs, built-in plugins, entry-point plugins, and one rule for
every `register_*` hook.

Each hook implementation is guarded as its plugin is registered: one that raises is logged,
counted in `Plugins.failures` (which `status` reports) and skipped (it returns None, which
every hook treats as "nothing to add"), so a broken plugin never breaks a turn.

A `register_*` hook registers items by name (`registry(pm, hook)`), and a name registered
twice is settled the same way in every registry: the built-in plugins' item is kept, else
the first-registered plugin's, and the clash is logged and listed in `Plugins.clashes`
with the plugin that caused it. An item its registry refuses (a bad name) is skipped and
listed there the same way: the check runs outside the guard, so the report names the plugin
that registered it.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
from collections import Counter
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

import pluggy

from mnemoweave import hookspecs

log = logging.getLogger("mnemoweave.plugins")

BUILTIN_PLUGINS = (
    "mnemoweave.default_plugins.embedders",
    "mnemoweave.default_plugins.classifier",
    "mnemoweave.default_plugins.distiller",
    "mnemoweave.default_plugins.weave",
    "mnemoweave.default_plugins.remote_models",  # off unless the config names them
    "mnemoweave.team.plugin",
)  # the built-in hosts join when they are first asked for (hosts.adapters.hosts)
BUILTIN_PREFIX = "mnemoweave."  # a plugin registered under such a name is built in


class Guarded:
    """A plugin as it is registered: its hook implementations, each guarded."""

    def __init__(self, plugin: object, name: str, failures: Counter[str]) -> None:
        self.plugin = plugin
        for attr in dir(plugin):
            if not _routine(inspect.getattr_static(plugin, attr, None)):
                continue  # properties and other descriptors are not run, as pluggy does
            function = getattr(plugin, attr)
            opts = getattr(function, f"{hookspecs.PROJECT}_impl", None)
            if isinstance(opts, dict):
                wraps = opts.get("wrapper") or opts.get("hookwrapper")
                setattr(self, attr, function if wraps else _guard(function, name, attr, failures))


def _routine(found: object) -> bool:
    return isinstance(found, (staticmethod, classmethod)) or inspect.isroutine(found)


def _guard(function: Callable[..., Any], plugin: str, hook: str, counts: Counter[str]) -> Any:
    @functools.wraps(function)  # keeps the marker and the argument names pluggy reads
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except Exception:
            counts[f"{plugin}.{hook}"] += 1
            log.exception("plugin %s failed in %s; skipped", plugin, hook)
            return None

    return guarded


class Plugins(pluggy.PluginManager):
    """mnemoweave's plugin manager: never a module-level global, so tests and engines stay
    independent. A plugin registered later (tests, embedding apps) is guarded as the first
    ones were, and the registries are asked again."""

    def __init__(self) -> None:
        super().__init__(hookspecs.PROJECT)
        self.add_hookspecs(hookspecs)
        self.failures: Counter[str] = Counter()  # `plugin.hook` -> how often it raised
        self.clashes: list[str] = []  # registrations a registry did not keep, and why
        self._registries: dict[str, dict[str, Any]] = {}

    def register(self, plugin: object, name: str | None = None) -> str | None:
        if any(getattr(known, "plugin", None) is plugin for _, known in self.list_name_plugin()):
            raise ValueError(f"plugin already registered: {plugin!r}")
        name = name or self.get_canonical_name(plugin)
        registered = super().register(Guarded(plugin, name, self.failures), name=name)
        self.check_pending()
        self._registries.clear()
        return registered


def make_plugin_manager(load_entrypoints: bool = True) -> Plugins:
    """A fresh manager with the built-in plugins and (unless told not to) those of the
    `mnemoweave` entry-point group."""
    pm = Plugins()
    for name in BUILTIN_PLUGINS:
        pm.register(importlib.import_module(name), name=name)
    if load_entrypoints:
        for point in entry_points(group=hookspecs.PROJECT):
            if not pm.has_plugin(point.name):
                pm.register(point.load(), name=point.name)
    return pm


def _in_turn(pm: Plugins, hook_name: str) -> list[pluggy.HookImpl]:
    """The hook's implementations in the order a registry hears them: built-ins first, then
    the others as they were registered."""
    impls = getattr(pm.hook, hook_name).get_hookimpls()
    order = [name for name, _ in pm.list_name_plugin()]  # as they were registered
    order = sorted(order, key=lambda name: not name.startswith(BUILTIN_PREFIX))
    return sorted(impls, key=lambda impl: order.index(impl.plugin_name))


def clash(pm: Plugins, plugin: str, hook_name: str, what: str) -> None:
    """Report a registration a registry did not keep."""
    pm.clashes.append(f"{plugin}: {hook_name} {what}")
    log.warning("plugin %s: %s %s", plugin, hook_name, what)


def registry(
    pm: Plugins,
    hook_name: str,
    named: Callable[..., tuple[str, Any]] = lambda name, item: (name, item),
    check: Callable[[str, Any], str | None] = lambda name, item: None,
) -> dict[str, Any]:
    """What the `register_*` hook `hook_name` registers, by name: asked once per manager
    (and again after a plugin is added). `named` turns what a plugin passes to `register`
    into (name, item); `check` says what is wrong with an item (None: nothing)."""
    if hook_name not in pm._registries:
        found: dict[str, Any] = {}
        owner: dict[str, str] = {}
        for impl in _in_turn(pm, hook_name):
            heard: list[tuple[str, Any]] = []
            impl.function(register=lambda *args, into=heard: into.append(named(*args)))
            for name, item in heard:
                wrong = check(name, item)
                if wrong:
                    clash(pm, impl.plugin_name, hook_name, f"{name!r} refused: {wrong}")
                elif name in found:
                    kept = f"{owner[name]}'s is kept"
                    clash(pm, impl.plugin_name, hook_name, f"{name!r} registered twice: {kept}")
                else:
                    found[name], owner[name] = item, impl.plugin_name
        pm._registries[hook_name] = found
    return pm._registries[hook_name]


FALLBACK = {"register_classifiers": "builtin", "register_distillers": "extractive"}


def chosen(pm: Plugins, hook_name: str, name: str) -> Any:
    """The item a setting names in a registry: an unknown name (a typo in the config must
    not cost a turn) gives the built-in one (FALLBACK), with a warning."""
    found = registry(pm, hook_name)
    if name not in found:
        what = hook_name.removeprefix("register_").removesuffix("s")
        known, fallback = ", ".join(sorted(found)), FALLBACK[hook_name]
        log.warning("unknown %s %r (registered: %s); using %s", what, name, known, fallback)
        name = fallback
    return found[name]


def add_commands(cli: Any, pm: Plugins | None = None) -> None:
    """Let plugins add their commands to the CLI's click group (register_commands), once
    per group; `pm` defaults to a manager with the entry-point plugins. A command named
    like one the group has already is not replaced: the clash is reported."""
    if getattr(cli, "_mnemoweave_plugged", False):
        return
    cli._mnemoweave_plugged = True
    pm = pm or make_plugin_manager()
    for impl in _in_turn(pm, "register_commands"):
        before = dict(cli.commands)
        impl.function(cli=cli)
        for name, command in before.items():
            if cli.commands.get(name) is not command:
                cli.commands[name] = command
                kept = "the command line's own is kept"
                clash(pm, impl.plugin_name, "register_commands", f"{name!r} taken: {kept}")
