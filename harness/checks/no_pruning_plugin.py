"""(a) No pruning plugin is wired into the App."""

from __future__ import annotations

from .base import CheckContext, CheckResult, check, failed, passed

NAME = "no_pruning_plugin"


@check(
    NAME,
    title="No pruning plugin wired",
    why="Stage gating and the stage plugin replace both jobs of RlmContextPruningPlugin (staleness protection "
        "and consumed marking); a pruning plugin still in App.plugins means the migration is not done.",
    dod_item="000: RlmContextPruningPlugin is not constructed and not in App(plugins=[...])",
)
def no_pruning_plugin(ctx: CheckContext) -> CheckResult:
    plugins = ctx.trace.plugins
    pruning = [(i, name) for i, name in enumerate(plugins)
               if name in ctx.profile.pruning_plugins or "Pruning" in name]
    if pruning:
        return failed(NAME, f"{len(pruning)} pruning plugin(s) wired into the App.",
                      [f"plugin #{i} {name!r} is in App.plugins" for i, name in pruning])
    listed = ", ".join(plugins) if plugins else "none"
    return passed(NAME, f"No pruning plugin among the App's plugins ({listed}).")
