"""What a speculative variant's drafter accepts, by the text it drafts for, and SGLang's /metrics
(--enable-metrics) that report it.

A drafter's accept length follows the text: code is more predictable than chat (the EAGLE papers,
Li et al. 2024-2025, report a higher acceptance on HumanEval than on MT-bench for every model),
and a drafter trained apart from the model on English data accepts little of another language
(Yi et al., "Towards Fast Multilingual LLM Inference: Speculative Decoding and Specialized
Drafters", EMNLP 2024), while the model's own MTP layer (NEXTN) was trained with the model, on
all its languages. A verify step's time barely depends on how many drafts it accepts, so a
request's decode speed follows its accept length (the watch's projected speed assumes the same).
"""
import re
import threading
import time

# A variant's accept length on the performance gate's prompt set (the collection's sglang_bench
# PROMPTS: 3 asking for code of 16) and its decode speed there (server.TOKEN_RATES).
ACCEPT_LENGTHS = {"EAGLE": 2.8, "DFLASH": 5.1, "DDTREE": 6.4}
# Factors on the drafts a step accepts (accept length - 1), by the prompt's kind. Code's and
# chat's keep the gate's prompt set at ACCEPT_LENGTHS (its mean: 3 x 1.2 + 13 x 0.954 = 16) and its
# speed within 1 % of TOKEN_RATES (a test checks both).
DRAFT_FACTORS = {"code": 1.2, "chat": 0.954}
# Another language: a drafter of its own (DFLASH, DDTREE, an EAGLE head) accepts little; the
# model's own MTP layer (NEXTN: EAGLE without a draft model) nearly as much as in English.
OTHER_LANGUAGE = {"own_layer": 0.85, "separate": 0.1}
CODE = re.compile(r"```|\bdef |\b(?:python|sql|bash|shell|function|script|code|query|regex|json|yaml)\b", re.I)
LETTER = re.compile(r"[^\W\d_]")
# metrics_reporter.py logs the decode stats - and sets the scheduler's gauges - every
# decode_log_interval (40) decode steps.
DECODE_LOG_INTERVAL = 40


def prompt_kind(text):
    """code, chat, or other_language (most of its letters outside ASCII)."""
    letters = LETTER.findall(text or "")
    if letters and sum(1 for c in letters if ord(c) > 127) > 0.5 * len(letters):
        return "other_language"
    return "code" if CODE.search(text or "") else "chat"


def accept_length(algorithm, own_layer, kind):
    """The accept length of `algorithm` (resolved: NEXTN is EAGLE) on a prompt of `kind`, or None
    without speculative decoding."""
    base = ACCEPT_LENGTHS.get(algorithm)
    if base is None:
        return None
    if kind == "other_language":
        factor = OTHER_LANGUAGE["own_layer" if own_layer else "separate"]
    else:
        factor = DRAFT_FACTORS[kind]
    return 1 + (base - 1) * factor


def speed_factor(algorithm, own_layer, kind):
    """A request's decode speed against the gate's, by its prompt's kind (1 without speculation)."""
    accept = accept_length(algorithm, own_layer, kind)
    return accept / ACCEPT_LENGTHS[algorithm] if accept else 1.0


class Metrics:
    """SGLang's Prometheus text at /metrics (observability/metrics_collector.py): the scheduler's
    gauges of TP0 (set each DECODE_LOG_INTERVAL verify steps: the last interval's accept length
    and generation throughput, as metrics_reporter.log_decode_stats) and the tokenizer's
    request counters."""

    def __init__(self, model_name):
        self.lock = threading.Lock()
        self.tokenizer_labels = 'engine_type="unified",model_name="%s"' % model_name
        self.scheduler_labels = 'engine_type="unified",model_name="%s",moe_ep_rank="0",pp_rank="0",tp_rank="0"' \
            % model_name
        self.created = time.time()
        self.requests = {"false": 0, "true": 0}
        self.aborted = self.prompt_tokens = self.generation_tokens = 0
        self.accept = self.throughput = 0.0
        self.window = {"since": time.monotonic(), "tokens": 0, "steps": 0}

    def finished(self, streaming, prompt_tokens, tokens, steps, aborted=False):
        """One request done: its counters, and the decode window (`steps` verify steps for
        `tokens` tokens) that sets the gauges once DECODE_LOG_INTERVAL steps are in it."""
        with self.lock:
            self.requests["true" if streaming else "false"] += 1
            self.aborted += 1 if aborted else 0
            self.prompt_tokens += prompt_tokens
            self.generation_tokens += tokens
            window = self.window
            window["tokens"] += tokens
            window["steps"] += steps
            if window["steps"] >= DECODE_LOG_INTERVAL:
                now = time.monotonic()
                self.accept = window["tokens"] / window["steps"]
                self.throughput = window["tokens"] / max(now - window["since"], 1e-6)
                self.window = {"since": now, "tokens": 0, "steps": 0}

    def text(self, running):
        """The exposition, with `running` requests in flight."""
        with self.lock:
            rows = [
                ("sglang:num_running_reqs", "gauge", "The number of running requests.",
                 [(self.scheduler_labels, running)]),
                ("sglang:gen_throughput", "gauge", "The generation throughput (token/s).",
                 [(self.scheduler_labels, self.throughput)]),
                ("sglang:spec_accept_length", "gauge", "Mean acceptance length of speculative decoding (accepted "
                 "drafts + bonus token per forward).", [(self.scheduler_labels, self.accept)]),
                ("sglang:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
                 [(self.tokenizer_labels, self.prompt_tokens)]),
                ("sglang:generation_tokens_total", "counter", "Number of generation tokens processed.",
                 [(self.tokenizer_labels, self.generation_tokens)]),
                ("sglang:num_requests_total", "counter", "Number of requests processed.",
                 [('%s,is_streaming="%s"' % (self.tokenizer_labels, s), n) for s, n in sorted(self.requests.items())]),
                ("sglang:num_aborted_requests_total", "counter", "Number of requests aborted.",
                 [(self.tokenizer_labels, self.aborted)]),
            ]
        out = []
        for name, kind, doc, series in rows:
            family = name[:-len("_total")] if kind == "counter" else name
            out += ["# HELP %s %s" % (family, doc), "# TYPE %s %s" % (family, kind)]
            for labels, value in series:
                out.append("%s{%s} %s" % (name, labels, float(value)))
                if kind == "counter":
                    out.append("%s_created{%s} %s" % (family, labels, self.created))
        return "\n".join(out) + "\n"
