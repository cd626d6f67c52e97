"""The interrupt callback: a SIGINT whose KeyboardInterrupt was dropped (as Python drops one
raised in a fork's after-in-parent hook) is raised again at the controller's next step; one
that was not dropped, or none, changes nothing; a second Ctrl-C still ends the process."""
from __future__ import annotations

import signal
from unittest.mock import MagicMock

import pytest

from ansible_collections.inferops.sglang.plugins.callback.interrupt import CallbackModule


def tqm_handler(signum, _frame):
    # What ansible-core's task queue manager does: the default back, then KeyboardInterrupt.
    signal.signal(signum, signal.SIG_DFL)
    raise KeyboardInterrupt()


@pytest.fixture
def plugin():
    before = signal.signal(signal.SIGINT, tqm_handler)
    got = CallbackModule()
    got.v2_playbook_on_start(MagicMock())
    yield got
    signal.signal(signal.SIGINT, before)


def sigint_dropped():
    """The handler runs where its exception is dropped (a fork hook, a finalizer)."""
    try:
        signal.getsignal(signal.SIGINT)(signal.SIGINT, None)
    except KeyboardInterrupt:
        pass


STEPS = [
    ("v2_playbook_on_task_start", (MagicMock(), False)),
    ("v2_playbook_on_handler_task_start", (MagicMock(),)),
    ("v2_playbook_on_include", (MagicMock(),)),
    ("v2_runner_on_start", (MagicMock(), MagicMock())),
    ("v2_playbook_on_play_start", (MagicMock(),)),
    ("v2_playbook_on_stats", (MagicMock(),)),
]


@pytest.mark.parametrize("step,args", STEPS, ids=[step[0] for step in STEPS])
def test_a_dropped_interrupt_is_raised_again_at_the_next_step(plugin, step, args):
    getattr(plugin, step)(*args)   # no Ctrl-C yet: the run goes on
    sigint_dropped()
    with pytest.raises(KeyboardInterrupt):
        getattr(plugin, step)(*args)


def test_the_handler_still_raises_and_a_second_ctrl_c_gets_the_default(plugin):
    with pytest.raises(KeyboardInterrupt):
        signal.getsignal(signal.SIGINT)(signal.SIGINT, None)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_DFL


def test_no_handler_to_wrap_leaves_the_signal_alone():
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        CallbackModule().v2_playbook_on_start(MagicMock())
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
