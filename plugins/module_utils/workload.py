# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A user's own traffic, read from a file: the requests a tune replays against each variant.
Pure Python (no Ansible imports, the standard library only).

Two layouts are read, the ones SGLang's own serving benchmark reads (0.5.23's
`sglang/benchmark/datasets/custom.py` and `sharegpt.py`):

- JSON Lines, one request per line: `prompt` (its text) or `input_len` (its length in tokens,
  for a prompt the tune makes), `max_new_tokens` (or `output_len`, the benchmark's name),
  optionally `arrival` (seconds from the start: the replay keeps the user's own bursts) and
  `kind` (such as `code` or `chat`: the tables count each kind). A line that holds a
  conversation instead (`conversations` or `conversation`, turns with `value` or `content`) is
  read as the benchmark reads it: the first turn is the prompt, the second's length the answer's.
- ShareGPT: one JSON array of such conversations, the file people already have.

No tokenizer runs here (the controller has none, and the tune must not need the model's): a
text's length in tokens is estimated at CHARS_PER_TOKEN characters a token, the usual rule for
English text and code with the BPE tokenizers SGLang serves. The estimate sizes requests; the
server counts the tokens it really makes.

A file that does not parse is refused with the line (or entry) and the field that is wrong,
never with a line of the file itself: a workload holds users' prompts.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import random

# A workload is replayed request by request; larger files are sampled by the user first.
LIMIT_BYTES = 64 * 1024 * 1024
CHARS_PER_TOKEN = 4
# The benchmark prunes answers shorter than this (sharegpt.py: `output_len < 2`).
MIN_TOKENS = 2
MAX_PROBLEMS = 5
TURNS = ("conversations", "conversation")
FIELDS = ("prompt", "input_len", "max_new_tokens", "output_len", "arrival", "kind") + TURNS


class WorkloadError(ValueError):
    """The file cannot be used; str() says where and what to change."""


def tokens_of(text):
    """The estimated length of a text in tokens (at least 1)."""
    return max(1, (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN)


def read(text, source, limit=LIMIT_BYTES):
    """The requests of a workload file's text (str or bytes), in arrival order (file order
    when no request has an arrival). Raises WorkloadError naming `source` and what to change."""
    size = len(text)
    if size > limit:
        raise WorkloadError("%s is %d bytes, above the limit of %d: sample it to fewer requests first"
                            % (source, size, limit))
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as err:
            raise WorkloadError("%s is not UTF-8 text (byte %d): save it as UTF-8" % (source, err.start))
    if text.lstrip().startswith("["):
        entries, problems = _sharegpt(text, source)
    else:
        entries, problems = _jsonl(text)
    requests = []
    for where, entry in entries:
        request, problem = request_of(entry)
        if problem:
            problems.append("%s: %s" % (where, problem))
        elif request:
            requests.append(request)
    if problems:
        raise WorkloadError(_problems_said(source, problems))
    if not requests:
        raise WorkloadError("%s holds no request: write one JSON object a line with prompt (or input_len) and "
                            "max_new_tokens, or a ShareGPT array of conversations" % source)
    return _in_arrival_order(requests, source)


def _problems_said(source, problems):
    more = len(problems) - MAX_PROBLEMS
    said = "; ".join(problems[:MAX_PROBLEMS]) + ("; and %d more" % more if more > 0 else "")
    return "%s cannot be read: %s" % (source, said)


def _jsonl(text):
    """(line name, parsed object or the problem) of each line that is not blank."""
    entries, problems = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entries.append(("line %d" % number, json.loads(line)))
        except ValueError as err:
            # (The decoder's message names a column, never the text.)
            problems.append("line %d: not JSON (%s at column %d)" % (number, err.msg, err.colno))
    return entries, problems


def _sharegpt(text, source):
    try:
        data = json.loads(text)
    except ValueError as err:
        raise WorkloadError("%s starts as a JSON array but is not JSON (%s at line %d, column %d)"
                            % (source, err.msg, err.lineno, err.colno))
    if not isinstance(data, list):
        raise WorkloadError("%s: a ShareGPT file is one JSON array of conversations" % source)
    return [("entry %d" % index, entry) for index, entry in enumerate(data)], []


def request_of(entry):
    """(request, problem) of one parsed line or entry: a request is a dict with `prompt` (text or
    None), `input_len`, `max_new_tokens`, `arrival` (None when not given) and `kind`. A
    conversation with fewer than two turns, or an answer shorter than MIN_TOKENS, is left out
    as the benchmark leaves it out: (None, None)."""
    if not isinstance(entry, dict):
        return None, "a request is a JSON object, not a %s" % _type(entry)
    entry = dict((key, value) for key, value in entry.items() if value is not None)
    unknown = sorted(set(entry) - set(FIELDS))
    if unknown:
        return None, "unknown field %s (the fields: %s)" % (", ".join(unknown), ", ".join(FIELDS))
    turns = next((entry[key] for key in TURNS if key in entry), None)
    if turns is not None:
        return _conversation(turns, entry)
    return _plain(entry)


def _plain(entry):
    if ("prompt" in entry) == ("input_len" in entry):
        return None, "give prompt (its text) or input_len (its length in tokens), one of them"
    prompt = entry.get("prompt")
    if prompt is not None and (not isinstance(prompt, str) or not prompt):
        return None, "prompt must be a text that is not empty, not a %s" % _type(prompt)
    length = tokens_of(prompt) if prompt is not None else entry["input_len"]
    if not _whole(length, 1):
        return None, "input_len must be a whole number of at least 1, not %s" % _said(length)
    answer = entry.get("max_new_tokens", entry.get("output_len"))
    if answer is None:
        return None, "give max_new_tokens (the answer's length in tokens)"
    if not _whole(answer, 1):
        return None, "max_new_tokens must be a whole number of at least 1, not %s" % _said(answer)
    return _request(entry, prompt, int(length), int(answer))


def _conversation(turns, entry):
    if not isinstance(turns, list) or not all(isinstance(turn, dict) for turn in turns):
        return None, "conversations must be a list of turns (objects with value or content)"
    if len(turns) < 2:
        return None, None
    said = [turn.get("value", turn.get("content")) for turn in turns[:2]]
    if not all(isinstance(text, str) for text in said):
        return None, "each of the first two turns needs its text in value or content"
    answer = entry.get("max_new_tokens", entry.get("output_len"))
    if answer is not None and not _whole(answer, 1):
        return None, "max_new_tokens must be a whole number of at least 1, not %s" % _said(answer)
    answer = int(answer) if answer is not None else tokens_of(said[1])
    if not said[0] or answer < MIN_TOKENS:
        return None, None
    return _request(entry, said[0], tokens_of(said[0]), answer)


def _request(entry, prompt, input_len, max_new_tokens):
    arrival = entry.get("arrival")
    if arrival is not None and not (_number(arrival) and arrival >= 0):
        return None, "arrival must be seconds from the start (a number of at least 0), not %s" % _said(arrival)
    kind = entry.get("kind", "")
    if not isinstance(kind, str):
        return None, "kind must be a word such as code or chat, not %s" % _said(kind)
    return {"prompt": prompt, "input_len": input_len, "max_new_tokens": max_new_tokens,
            "arrival": None if arrival is None else float(arrival), "kind": kind}, None


def _in_arrival_order(requests, source):
    timed = [request["arrival"] is not None for request in requests]
    if any(timed) and not all(timed):
        raise WorkloadError("%s: %d of %d requests have an arrival: give every request one, or none"
                            % (source, sum(timed), len(timed)))
    if all(timed):
        return sorted(requests, key=lambda request: request["arrival"])
    return requests


def compact(request):
    """A request as read() returns it, written back as a line of a workload file would hold it
    (what the module takes): its prompt or its length, and no empty field."""
    kept = dict((key, value) for key, value in request.items() if value not in (None, ""))
    if kept.get("prompt"):
        kept.pop("input_len", None)
    return kept


def prompt_of(request):
    """The text a request sends: its own, or one the tune makes of input_len words (one token
    each by the estimate; the stand-in counts a prompt's words), a code prompt for kind code so
    that a drafter meets the text it would meet."""
    if request.get("prompt"):
        return request["prompt"]
    lead = "Write a python function: " if request.get("kind") == "code" else "Tell me: "
    return lead + " ".join("w%02d" % (i % 100) for i in range(max(1, request["input_len"] - 3)))


def schedule(requests, rate=None, seed=0):
    """When each request is due, in seconds from the start of the step, or None (a closed loop:
    each as soon as one of the concurrency's slots is free).

    - Arrivals in the workload, no rate: the user's own times.
    - Arrivals and a rate: the user's times scaled to that mean rate (its bursts kept).
    - A rate alone: a Poisson process at that rate, as SGLang's bench_serving sends
      (`np.random.exponential(1.0 / request_rate)` between two), seeded so that two steps at
      one rate send at the same moments.
    """
    timed = bool(requests) and requests[0].get("arrival") is not None
    if timed:
        first = requests[0]["arrival"]
        own = [request["arrival"] - first for request in requests]
        span = own[-1]
        if rate is None or not span:
            return own
        factor = (len(own) - 1) / span / float(rate)
        return [round(moment * factor, 6) for moment in own]
    if rate is None:
        return None
    draw, moment, times = random.Random(seed), 0.0, []
    for dummy in requests:
        times.append(round(moment, 6))
        moment += draw.expovariate(float(rate))
    return times


def summary(requests):
    """What a table says of a workload: its size, the lengths' medians and largest, its kinds,
    and the rate its own arrivals keep (None without arrivals)."""
    inputs = sorted(request["input_len"] for request in requests)
    outputs = sorted(request["max_new_tokens"] for request in requests)
    kinds = {}
    for request in requests:
        kinds[request["kind"] or "-"] = kinds.get(request["kind"] or "-", 0) + 1
    span = None
    if requests[0]["arrival"] is not None and len(requests) > 1:
        span = requests[-1]["arrival"] - requests[0]["arrival"]
    return {
        "requests": len(requests),
        "input_len_p50": inputs[len(inputs) // 2], "input_len_max": inputs[-1],
        "max_new_tokens_p50": outputs[len(outputs) // 2], "max_new_tokens_max": outputs[-1],
        "kinds": kinds,
        "arrival_rate": round((len(requests) - 1) / span, 3) if span else None,
    }


def _number(value):
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _whole(value, least):
    return _number(value) and float(value).is_integer() and value >= least


def _type(value):
    return {dict: "object", list: "list", str: "text", bool: "true/false", type(None): "null"}.get(
        type(value), "number")


def _said(value):
    """A wrong value named by its kind, or the number itself (never a text of the file)."""
    return repr(value) if _number(value) else "a %s" % _type(value)
