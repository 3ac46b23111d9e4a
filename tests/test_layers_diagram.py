"""The picture of a layered machine: every state of every layer is drawn, and only the current ones are filled."""

from __future__ import annotations

import pytest
from matplotlib.patches import FancyBboxPatch

from labkit.core.errors import LabkitError
from labkit.layers.diagram import draw_layer_stack
from labkit.layers.writing import writing_spec

CURRENT = {"phase": "WRITING", "flow": "REVIEWING", "writing": "review", "lifecycle": "running"}


def _filled_labels(ax) -> list[str]:
    boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
    filled = {(round(b.get_x() + b.get_width() / 2, 6), round(b.get_y() + b.get_height() / 2, 6))
              for b in boxes if b.get_facecolor()[:3] != (1.0, 1.0, 1.0)}
    return sorted(t.get_text() for t in ax.texts if (round(t.get_position()[0], 6), round(t.get_position()[1], 6))
                  in filled)


def test_every_state_of_every_layer_is_a_box_and_only_the_current_ones_are_filled():
    spec = writing_spec()
    ax = draw_layer_stack(spec, CURRENT)
    states = [s for layer in (*spec.all_layers(), spec.lifecycle) for s in layer.table.states]
    assert len([p for p in ax.patches if isinstance(p, FancyBboxPatch)]) == len(states)
    assert _filled_labels(ax) == sorted(CURRENT.values())


def test_a_state_a_layer_does_not_have_is_refused_with_the_layer_named():
    with pytest.raises(LabkitError) as caught:
        draw_layer_stack(writing_spec(), {**CURRENT, "flow": "DRAFTING"})
    assert caught.value.message == "cannot highlight 'DRAFTING': it is not a state of layer 'flow'"
