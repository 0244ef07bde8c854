"""The studio's footer: Textual's Footer, showing on a small screen the keys that matter where the focus is.

Each key it shows is marked ``-extra`` unless it matters in the focus's context (:data:`CONTEXT_KEYS`, by the
id of the focused widget or of its nearest ancestor that has an entry; ``few`` elsewhere); studio.tcss hides
the ``-extra`` keys under a ``-few-keys`` screen, so 80 columns show those keys in full instead of a row
cut off at the edge. A context's key is shown even where its binding is not (``show=False``: F9 and F10
with a project open), and a focused widget's own keys that its bindings do not show come first as hints
(:data:`HINTS`: Enter picks in the anchor list). Hidden keys still work; F1 lists them all, and the
command palette (ctrl+p) finds them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer
from textual.widgets._footer import FooterKey  # not re-exported by textual.widgets

# The studio's keys (action names) that matter where the focus is, by widget id; each fits 80 columns
# with its hints and the project's keys (tests/test_studio_keys.py measures it). The palette's key is not
# shown there (studio.tcss): F1's sheet names it.
CONTEXT_KEYS: dict[str, frozenset[str]] = {
    "editor": frozenset({"play", "play_cursor", "stop", "audition", "keys", "panel"}),
    "anchor-list": frozenset({"audition", "flip", "assign", "keys", "panel"}),
    "anchor-filter": frozenset({"audition", "play", "stop", "keys", "panel"}),
    "morph": frozenset({"audition", "flip", "next_duo", "set_partner", "keys", "panel"}),
    "takes": frozenset({"undo", "play_cursor", "keys", "panel"}),
    "take-strip": frozenset({"play", "stop", "keys", "panel"}),
}
PROJECT_KEYS: dict[str, frozenset[str]] = {  # besides, with a project open
    "editor": frozenset({"regenerate", "compare"}),
    "takes": frozenset({"regenerate", "compare"}),
    "take-strip": frozenset({"regenerate", "compare"}),
}
# A focused widget's own keys that its bindings do not show: (key, how it is shown, what it does).
HINTS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "anchor-list": (("enter", "⏎", "Pick"),),
    "morph": (("left", "←→", "Ratio"),),
    "takes": (("enter", "⏎", "Choose"),),
    "take-strip": (("enter", "⏎", "Go"),),
}


def action_name(action: str) -> str:
    """``panel('meter')`` -> ``panel``; ``app.quit`` -> ``quit``."""
    return action.split("(", 1)[0].rpartition(".")[2]


class StudioFooter(Footer):
    def __init__(self, few: Iterable[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.few = frozenset(few)

    def context(self) -> str:
        """The focus's context: the id of the focused widget or of its nearest ancestor in
        :data:`CONTEXT_KEYS`, else ""."""
        focused = self.screen.focused
        for node in focused.ancestors_with_self if focused is not None else ():
            if node.id in CONTEXT_KEYS:
                return node.id
        return ""

    def project_open(self) -> bool:
        studio = getattr(self.app, "studio", None)
        return getattr(getattr(studio, "takes", None), "project", None) is not None

    def wanted(self, context: str) -> frozenset[str]:
        """The action names shown on a small screen in ``context``."""
        if context not in CONTEXT_KEYS:
            return self.few
        project = PROJECT_KEYS.get(context, frozenset()) if self.project_open() else frozenset()
        return CONTEXT_KEYS[context] | project

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        context = self.context()
        wanted = self.wanted(context)
        keys = [FooterKey(key, shown, description, "", classes="-hint").data_bind(compact=Footer.compact)
                for key, shown, description in HINTS.get(context, ())]
        seen: set[str] = set()
        # in the screen's order (its BINDINGS), then the focused widget's
        order = {b.action: n for n, b in enumerate(b for b in self.screen.BINDINGS if isinstance(b, Binding))}
        active = sorted(self.screen.active_bindings.values(), key=lambda item: order.get(item[1].action, len(order)))
        for _node, binding, enabled, tooltip in active:
            name = action_name(binding.action)
            if binding.action in seen or not (binding.show or name in wanted):
                continue
            seen.add(binding.action)
            widget = FooterKey(binding.key, self.app.get_key_display(binding), binding.description, binding.action,
                               disabled=not enabled, tooltip=tooltip).data_bind(compact=Footer.compact)
            widget.set_class(name not in wanted, "-extra")
            keys.append(widget)
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            palette = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
            if palette is not None:
                _node, binding, enabled, tooltip = palette
                keys.append(FooterKey(binding.key, self.app.get_key_display(binding), binding.description,
                                      binding.action, classes="-command-palette", disabled=not enabled,
                                      tooltip=binding.tooltip or binding.description))
        self._keys = keys
        self.call_after_refresh(self.fit_keys)
        yield from keys

    def fit_keys(self) -> None:
        """Where every key would not fit the footer's width (a wide screen's footer with a project's keys), only
        the context's are shown (``-crowded`` hides the ``-extra`` keys, as ``-few-keys`` does on a small one)."""
        need = sum(_width(key, self.compact) for key in getattr(self, "_keys", ()))
        self.set_class(need > self.size.width, "-crowded")

    def on_resize(self) -> None:
        self.fit_keys()

    def watch_compact(self) -> None:
        self.fit_keys()


def _width(key: FooterKey, compact: bool) -> int:
    """The columns ``key`` takes in the footer (FooterKey's padding and margins, Textual's footer CSS)."""
    text = len(key.key_display) + (1 + len(key.description) if key.description else 0)
    return text + (1 if compact else 2) + (2 if key.has_class("-command-palette") else 0)
