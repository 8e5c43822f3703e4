"""Writes agent_sample.csv: a small synthetic agent trace (not measured).

Sessions open every few seconds; each turn adds tool output to a growing
context, waits for the model, then the agent thinks a few seconds. Seeded, so
the file is the same each time: python3 make_sample.py > agent_sample.csv
"""
import random

rng = random.Random(41)
rows = []
t = 0.0
for session in range(40):
    t += rng.expovariate(1 / 3.0)
    turn_time = t
    for turn in range(rng.randint(3, 12)):
        new = int(rng.lognormvariate(10.5, 0.5)) if turn == 0 else int(rng.lognormvariate(7.5, 1.0)) + 1
        out = int(rng.lognormvariate(6.5, 0.7)) + 1
        rows.append((round(turn_time, 3), session, new, out))
        turn_time += 20.0 + rng.expovariate(1 / 8.0)
rows.sort()
print("# synthetic agent trace from make_sample.py (seed 41); not a measurement")
print("time_s,session,input_tokens,output_tokens")
for r in rows:
    print(f"{r[0]},{r[1]},{r[2]},{r[3]}")
