"""The stand-in's drafter model (lab/sglang_sim/speculative.py): a variant's accept length by
the prompt's kind, kept on the performance gate's own prompts, and SGLang's /metrics text."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import watch
from ansible_collections.inferops.sglang.plugins.module_utils.sglang_bench import PROMPTS
from sglang_sim import speculative
from sglang_sim.server import TOKEN_RATES


@pytest.mark.parametrize("text, kind", [
    ("Write a Python function that merges two sorted lists into one sorted list.", "code"),
    ("Write a SQL query that returns the ten customers with the highest total order value.", "code"),
    ("Write a bash one-liner that prints the five largest files under /var/log.", "code"),
    ("Explain what systemd's Restart=on-failure does and when it is a bad idea.", "chat"),
    ("the incident", "chat"),
    ("Translate into French: The server restarted twice before it became healthy.", "chat"),
    ("サーバーが二回再起動した理由を説明してください。", "other_language"),
    ("Объясни, почему сервер дважды перезапустился.", "other_language"),
    ("", "chat"),
], ids=["python", "sql", "bash", "systemd (chat, though it names a setting)", "the load's", "a translation asked in English",
        "japanese", "russian", "empty"])
def test_a_prompt_is_code_chat_or_another_language(text, kind):
    assert speculative.prompt_kind(text) == kind


def harmonic_speed(algorithm, own_layer, prompts):
    """The gate's measured speed against its figure: tokens over time, each prompt as many tokens."""
    return len(prompts) / sum(1 / speculative.speed_factor(algorithm, own_layer, speculative.prompt_kind(p))
                              for p in prompts)


@pytest.mark.parametrize("algorithm, own_layer", [("EAGLE", True), ("EAGLE", False), ("DFLASH", False),
                                                  ("DDTREE", False)])
def test_the_gates_own_prompts_keep_each_variants_accept_length_and_speed(algorithm, own_layer):
    kinds = [speculative.prompt_kind(p) for p in PROMPTS]
    assert kinds.count("code") == 3 and kinds.count("chat") == 13
    mean = sum(speculative.accept_length(algorithm, own_layer, k) for k in kinds) / len(kinds)
    assert mean == pytest.approx(speculative.ACCEPT_LENGTHS[algorithm], rel=1e-3)
    assert harmonic_speed(algorithm, own_layer, PROMPTS) == pytest.approx(1.0, abs=0.01)


def test_another_language_collapses_a_separate_drafter_but_not_the_models_own_layer():
    ddtree = speculative.accept_length("DDTREE", False, "other_language")
    nextn = speculative.accept_length("EAGLE", True, "other_language")
    assert ddtree == pytest.approx(1.54) and nextn == pytest.approx(2.53)
    # On Blackwell DDTREE then decodes slower than NEXTN would: under the watch's default 0.9.
    ddtree_speed = TOKEN_RATES["blackwell"]["DDTREE"] * speculative.speed_factor("DDTREE", False, "other_language")
    nextn_speed = TOKEN_RATES["blackwell"]["EAGLE"] * speculative.speed_factor("EAGLE", True, "other_language")
    assert ddtree_speed < watch.DEFAULTS["speed_ratio"] * TOKEN_RATES["blackwell"]["EAGLE"] and ddtree_speed < nextn_speed
    assert speculative.accept_length(None, False, "code") is None and speculative.speed_factor(None, False, "code") == 1


def test_the_metrics_text_is_what_the_watch_reads():
    metrics = speculative.Metrics("/models/qwen")
    before = watch.metrics_figures(metrics.text(0))
    assert before == {"accept_length": 0.0, "gen_throughput": 0.0, "requests": 0.0, "errors": 0.0}
    for _request in range(3):
        metrics.finished(True, 12, 64, 10)    # 30 verify steps: under the decode log interval
    assert watch.metrics_figures(metrics.text(2))["accept_length"] == 0.0
    metrics.finished(False, 12, 64, 16)       # 46: the gauges are set from the interval
    metrics.finished(True, 12, 0, 0, aborted=True)
    figures = watch.metrics_figures(metrics.text(1))
    assert figures["accept_length"] == pytest.approx(256 / 46) and figures["gen_throughput"] > 0
    assert (figures["requests"], figures["errors"]) == (5.0, 1.0)
    text = metrics.text(1)
    assert 'sglang:num_requests_total{engine_type="unified",model_name="/models/qwen",is_streaming="true"} 4.0' in text
    assert "# TYPE sglang:num_requests counter" in text and "sglang:num_running_reqs{" in text
