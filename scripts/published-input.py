#!/usr/bin/env python3
"""The inputs scripts/published.sh measures the published programs on, the same bytes on every
machine (a seeded generator, no download):

    published-input.py events N    a JSON array of N service events (about 160 bytes each),
                                   what jaq is run on
    published-input.py markdown N  a Markdown document of N sections (about 450 bytes each):
                                   headings, paragraphs with links and emphasis, lists, tables
                                   and fenced code, what mq is run on
"""
import json
import random
import sys

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda omicron".split()
SERVICES = ["auth", "billing", "search", "upload", "render", "mail", "cache", "queue"]


def words(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def events(rng, n):
    """Records of the shape a log pipeline hands jq: nested objects, arrays, strings, numbers."""
    out = []
    for i in range(n):
        out.append({
            "id": i,
            "service": rng.choice(SERVICES),
            "user": f"user{rng.randrange(20000):05}",
            "latency_ms": round(rng.lognormvariate(3, 1), 3),
            "status": rng.choice([200, 200, 200, 201, 204, 301, 404, 500]),
            "tags": [rng.choice(WORDS) for _ in range(rng.randrange(1, 6))],
            "meta": {"retry": rng.random() < 0.1, "shard": rng.randrange(64), "note": words(rng, 4)},
        })
    json.dump(out, sys.stdout, separators=(",", ":"))


def markdown(rng, n):
    """A long document of the parts Markdown tools meet in READMEs and books."""
    parts = ["# A generated book\n"]
    for i in range(n):
        parts.append(f"## Chapter {i}: {words(rng, 2)}\n")
        parts.append(
            f"{words(rng, 12).capitalize()}, see [{rng.choice(WORDS)}](https://example.com/{i}) and "
            f"**{rng.choice(WORDS)}** with `call_{i}()`. {words(rng, 8).capitalize()}.\n"
        )
        parts.append("".join(f"- {words(rng, 3)} [{j}](#ref-{i}-{j})\n" for j in range(rng.randrange(2, 6))))
        if i % 3 == 0:
            rows = "".join(f"| {rng.randrange(100)} | {rng.choice(WORDS)} | {rng.random():.3f} |\n" for _ in range(3))
            parts.append(f"### Figures {i}\n\n| n | name | share |\n|---|---|---|\n{rows}")
        if i % 2 == 0:
            body = "".join(f"let {rng.choice(WORDS)} = {rng.randrange(1000)};\n" for _ in range(rng.randrange(2, 6)))
            parts.append(f"```rust\n{body}```\n")
    sys.stdout.write("\n".join(parts))


def main():
    kinds = {"events": events, "markdown": markdown}
    if len(sys.argv) != 3 or sys.argv[1] not in kinds:
        sys.exit(f"usage: {sys.argv[0]} events|markdown N")
    kinds[sys.argv[1]](random.Random(54), int(sys.argv[2]))


if __name__ == "__main__":
    main()
