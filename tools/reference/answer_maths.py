"""What the reference deciders (*_contract.py) compute the same way: the shared token prefix of a
request's prompts, and the plain softmax with its entropy-confidence choice answer."""

from __future__ import annotations

import math


def shared_prefix_length(prompts: list[list[int]], granularity: int) -> int:
    """The longest common prefix, leaving every prompt at least one token, rounded down to a multiple
    of `granularity`: the prefix s1serve runs once."""
    length = min(len(p) for p in prompts)
    for prompt in prompts:
        i = 0
        while i < length and prompt[i] == prompts[0][i]:
            i += 1
        length = i
    length = min([length] + [len(p) - 1 for p in prompts])
    return length // granularity * granularity if granularity > 1 else length


def softmax(scores: list[float]) -> list[float]:
    m = max(scores)
    exps = [math.exp(s - m) for s in scores]
    total = 0.0
    for e in exps:
        total += e
    return [min(1.0, max(0.0, e / total)) for e in exps]


def choice_answer(names: list[str], probabilities: list[float]) -> dict:
    """The most probable option (the first on a tie) with 1 − entropy / log n as its confidence."""
    n = len(probabilities)
    best = max(range(n), key=lambda i: (probabilities[i], -i))
    entropy = -sum(p * math.log(p) for p in probabilities if p > 0)
    confidence = min(1.0, max(0.0, 1.0 - entropy / math.log(n))) if n > 1 else 1.0
    return {"type": "choice", "choice": names[best], "confidence": confidence,
            "probabilities": dict(zip(names, probabilities))}
