"""Writes mooncake_sample.jsonl: a small synthetic trace in Mooncake's format (not measured).

Mooncake's released traces (github.com/kvcache-ai/Mooncake, FAST25-release/traces)
give one request per line: arrival in ms, prompt and answer lengths, and one
hash id per 512-token block of the prompt, shared where prompts share a prefix.
This sample imitates their conversation trace: every prompt opens with the same
512-token system prompt (block 0), and a conversation's next turn sends its
whole history again (earlier prompt, answer, new message), so its leading full
blocks repeat the earlier prompt's ids. Seeded, so the file is the same each
time: python3 make_mooncake_sample.py > mooncake_sample.jsonl
"""
import json
import math
import random

BLOCK = 512
rng = random.Random(41)
next_id = 1  # block 0 is the shared system prompt


def new_ids(count):
    global next_id
    ids = list(range(next_id, next_id + count))
    next_id += count
    return ids


requests = []
t = 0.0
for conversation in range(60):
    t += rng.expovariate(1 / 5.0)
    turn_time = t
    prompt_tokens = BLOCK + int(rng.lognormvariate(8.3, 0.8))  # system prompt + first message
    ids = [0] + new_ids(math.ceil(prompt_tokens / BLOCK) - 1)
    for turn in range(rng.randint(1, 8)):
        output = int(rng.lognormvariate(5.8, 0.7)) + 1
        requests.append((round(turn_time * 1000), prompt_tokens, output, list(ids)))
        turn_time += output * 0.03 + rng.expovariate(1 / 30.0)
        # The next prompt: this one, its answer and a new message. Its full
        # blocks keep their ids; the partial last block and what follows are new.
        full = prompt_tokens // BLOCK
        prompt_tokens += output + int(rng.lognormvariate(5.5, 0.9)) + 1
        ids = ids[:full] + new_ids(math.ceil(prompt_tokens / BLOCK) - full)
requests.sort(key=lambda r: r[0])
for ms, prompt, output, ids in requests:
    print(json.dumps({"timestamp": ms, "input_length": prompt, "output_length": output, "hash_ids": ids}))
