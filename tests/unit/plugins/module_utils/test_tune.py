"""The tune's next-try decision as data: from a start's cause and SGLang's own memory lines to
the next envelope (module_utils/tune.py), the search over variants, its bounds, the winner."""
import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import tune

ENVELOPE = {"tp_size": 2, "mem_fraction_static": 0.88, "context_length": 131072, "max_running_requests": 16,
            "cuda_graph_max_bs_decode": 16, "attention_backend": "flashinfer"}
BOUNDS = {"context_length": [32768, 131072], "max_running_requests": [4, 16], "cuda_graph_max_bs_decode": [4, 16],
          "mem_fraction_static": [0.8, 0.92]}
KV = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.88"
WEIGHTS = ("ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.6. Raise "
           "--mem-fraction-static above 0.712 (minimum viable = 1 - available/pre = 0.7116).")
HYBRID = ("RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed "
          "max_mamba_cache_size=0 (total_rest_memory=0.41 GB, mamba_cache_per_req=612.50 MB).")


def env(**changes):
    return dict(ENVELOPE, **changes)


def attempt(envelope, outcome="rolled_back", cause=None, evidence="", memory=None, variant="ddtree", tok_s=None):
    return {"variant": variant, "envelope": envelope, "outcome": outcome, "cause": cause, "evidence": evidence,
            "memory": memory or {}, "tok_s": tok_s}


# (what the last start said, the next envelope's changes or the verdict, words of the why)
NEXT = [
    ("KV pool short: fewer running requests first",
     attempt(env(), cause="kv_pool_oom", evidence=KV), ("next", {"max_running_requests": 8}), "halving max_running_requests"),
    ("requests at their lowest: a shorter context",
     attempt(env(max_running_requests=4), cause="kv_pool_oom"), ("next", {"context_length": 65536}),
     "halving context_length"),
    ("context at the minimum that counts: the fraction to its bound",
     attempt(env(max_running_requests=4, context_length=32768), cause="kv_pool_oom"),
     ("next", {"mem_fraction_static": 0.92}), "raising mem_fraction_static"),
    ("nothing left to move: no fit, the KV pool named",
     attempt(env(max_running_requests=4, context_length=32768, mem_fraction_static=0.92), cause="kv_pool_oom"),
     ("no_fit", None), "the KV pool has no room for one 32768-token request"),
    ("weights: the minimum SGLang names, plus a margin",
     attempt(env(mem_fraction_static=0.8), cause="weights_leave_no_kv", evidence=WEIGHTS.replace("0.712", "0.852")),
     ("next", {"mem_fraction_static": 0.88}), "need more than 0.852"),
    ("weights above the fraction's bound: no fit",
     attempt(env(), cause="weights_leave_no_kv", evidence=WEIGHTS.replace("0.712", "0.95")),
     ("no_fit", None), "may go only to 0.92"),
    ("hybrid state: its own figures, the fraction raised",
     attempt(env(), cause="hybrid_state_oom", evidence=HYBRID), ("next", {"mem_fraction_static": 0.92}), "612.50 MB"),
    ("graphs: a smaller captured batch",
     attempt(env(), cause="cuda_graph_failed"), ("next", {"cuda_graph_max_bs_decode": 8}), "halving cuda_graph_max_bs_decode"),
    ("graphs capped by the running requests before halving",
     attempt(env(max_running_requests=4, cuda_graph_max_bs_decode=16), cause="cuda_graph_oom"),
     ("next", {"mem_fraction_static": 0.85}), "lowering mem_fraction_static"),
    ("graphs at their lowest: a smaller static budget",
     attempt(env(cuda_graph_max_bs_decode=4), cause="cuda_oom"), ("next", {"mem_fraction_static": 0.85}),
     "lowering mem_fraction_static"),
    ("healthy, but the pool holds less than one context: as the KV pool short",
     attempt(env(), outcome="deployed", memory={"kv_tokens": 6428}), ("next", {"max_running_requests": 8}),
     "holds 6428 tokens, less than one 131072-token request"),
    ("healthy with a whole context in its pool: fits",
     attempt(env(), outcome="deployed", memory={"kv_tokens": 132113}), ("fits", None), "started healthy"),
    ("healthy, no memory line said: fits (the gate is the judge)",
     attempt(env(), outcome="deployed"), ("fits", None), "started healthy"),
    ("a crash is no memory limit: the variant failed",
     attempt(env(), cause="cuda_error"), ("failed", None), "cuda_error: not a memory limit"),
    ("a stall neither", attempt(env(), cause="stalled"), ("failed", None), "stalled"),
]


@pytest.mark.parametrize("last,expected,why", [row[1:] for row in NEXT], ids=[row[0] for row in NEXT])
def test_the_next_try_comes_from_what_the_last_start_said(last, expected, why):
    verdict = tune.judge(last, BOUNDS, 32768)
    assert verdict[0] == expected[0] and why in verdict[-1], verdict
    if expected[0] == "next":
        changed = dict((k, v) for k, v in verdict[1].items() if last["envelope"].get(k) != v)
        assert changed == expected[1], verdict[1]


def test_the_first_try_is_the_top_of_the_bounds_with_the_fraction_kept_within_them():
    assert tune.first_envelope(env(max_running_requests=8, mem_fraction_static=0.95), BOUNDS) == env(mem_fraction_static=0.92)
    assert tune.first_envelope(env(), {}) == env(), "no bounds: the class envelope as it is"


def test_the_search_goes_variant_by_variant_and_stops_at_its_bounds():
    first = tune.plan(["ddtree", "dflash"], ENVELOPE, BOUNDS, 32768, [], 12, 100)
    assert first["next"] == {"variant": "ddtree", "envelope": env(), "why": "the top of the bounds", "try": 1}
    tried = [attempt(env(), cause="kv_pool_oom"), attempt(env(max_running_requests=8), outcome="deployed", tok_s=40.0)]
    after = tune.plan(["ddtree", "dflash"], ENVELOPE, BOUNDS, 32768, tried, 12, 100)
    assert after["next"]["variant"] == "dflash" and after["variants"][0]["status"] == "fits"
    used = tune.plan(["ddtree", "dflash"], ENVELOPE, BOUNDS, 32768, tried, 2, 100)
    assert used["done"] and used["stopped"] == "the tune's 2 tries are used"
    assert [s["status"] for s in used["variants"]] == ["fits", "not_tried"]
    late = tune.plan(["ddtree", "dflash"], ENVELOPE, BOUNDS, 32768, tried[:1], 12, 0)
    assert late["done"] and late["variants"][0]["status"] == "stopped" and "time limit" in late["stopped"]


def test_an_envelope_tried_already_is_not_tried_again():
    tried = [attempt(env(cuda_graph_max_bs_decode=8), cause="kv_pool_oom"),
             attempt(env(cuda_graph_max_bs_decode=8, max_running_requests=8), cause="cuda_graph_failed"),
             attempt(env(cuda_graph_max_bs_decode=4, max_running_requests=8), cause="kv_pool_oom")]
    state = tune.variant_state("ddtree", tried, ENVELOPE, BOUNDS, 32768)
    assert state["status"] == "next" and state["envelope"]["max_running_requests"] == 4
    looped = tried + [attempt(env(cuda_graph_max_bs_decode=8, max_running_requests=8), cause="kv_pool_oom")]
    looped[-1]["envelope"] = env(max_running_requests=16, cuda_graph_max_bs_decode=8)
    assert tune.variant_state("ddtree", looped, ENVELOPE, BOUNDS, 32768)["status"] == "no_fit"


@pytest.mark.parametrize("bounds,min_context,said", [
    ({"max_running_requests": [16, 4]}, 32768, "the lowest (16) is above the highest (4)"),
    ({"mem_fraction_static": [0.8, 1.2]}, 32768, "two fractions between 0 and 1"),
    ({"context_length": ["32k", 131072]}, 32768, "two whole numbers"),
    ({"tp_size": [1, 2]}, 32768, "the tune moves only"),
    ({"context_length": [4096, 16384]}, 32768, "sglang_tune_min_context (32768) is above"),
    ({}, "32k", "sglang_tune_min_context"),
    ([1, 2], 32768, "must be a mapping"),
])
def test_bad_bounds_are_named_with_what_to_write(bounds, min_context, said):
    problems = tune.bounds_problems(bounds, min_context, ENVELOPE)
    assert any(said in p for p in problems), problems


def test_the_winner_is_the_fastest_fit_and_the_known_good_is_the_floor():
    states = [{"variant": "ddtree", "status": "fits", "tok_s": 168.7, "envelope": env(max_running_requests=4)},
              {"variant": "dflash", "status": "fits", "tok_s": 247.7, "envelope": env(max_running_requests=4)},
              {"variant": "eagle3", "status": "no_fit", "why": "the KV pool ...", "envelope": env()}]
    chosen = tune.winner(states, {"variant": "nextn", "tok_s": 179.8})
    assert chosen["winner"]["variant"] == "dflash" and chosen["winner"]["ratio"] == 1.378
    assert [r["vs_winner"] for r in chosen["rows"]] == [0.681, 1.0, None]
    slow = tune.winner(states[:1], {"variant": "nextn", "tok_s": 179.8})
    assert slow["winner"] == {"variant": "nextn", "known_good": True, "tok_s": 179.8, "ratio": 1.0}
    text = tune.table([dict(chosen, **{"class": "a6000", "known_good": {"variant": "nextn", "tok_s": 179.8}})])
    assert "a6000      dflash   ctx 131072, req 4, graphs 16, mem 0.88          247.7   1.38x  winner" in text
    assert "no fit: the KV pool" in text


def test_a_try_is_read_from_its_deploy_report():
    report = {"outcome": "rolled_back", "cause": "kv_pool_oom", "seconds": 18.1,
              "health": {"evidence": [{"match": KV}], "memory": {"weights_avail_gib": 19.71}}, "perf": None}
    got = tune.attempt_from_report(report, "ddtree", env(), "the top of the bounds")
    assert (got["cause"], got["evidence"], got["memory"], got["tok_s"]) == ("kv_pool_oom", KV, {"weights_avail_gib": 19.71}, None)
    fitted = tune.attempt_from_report({"outcome": "deployed", "perf": {"new": {"output_tokens_per_s": 741.4}}}, "ddtree", env(), "")
    assert fitted["tok_s"] == 741.4 and fitted["evidence"] == ""
