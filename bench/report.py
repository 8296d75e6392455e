# SPDX-License-Identifier: Apache-2.0
"""Turns bench/run's raw figures into the side-by-side table and
bench/results.json. Medians across runs; ratios within the same run set."""
import json
import os
import platform
import statistics
import sys
from datetime import datetime, timezone

work, quick, commit = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
only = sys.argv[4] if len(sys.argv) > 4 else ""  # "grpc": bench/run --only grpc


def load_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def ratio(a, b):
    return a / b if b else float("nan")  # h2load's CPU can round to 0 on short runs


GRPC_CLIENTS = ["raw", "raw-deadline", "outbound", "blocking", "by-name", "telemetry", "async",
                "stub-callback", "outbound-async"]
GRPC_HEADS = {"raw": "raw stub", "raw-deadline": "raw+deadl.", "outbound": "outbound",
              "blocking": "blocking", "by-name": "by name", "telemetry": "telemetry",
              "async": "async stub", "stub-callback": "stub cb.", "outbound-async": "outb.async"}
# Issue 14's targets, judged on the paired runs (grpc_bench paired: one
# process, alternating blocks) against the raw stub as a user of grpc++
# alone writes it, no deadline: each blocking form against the blocking
# stub, the asynchronous form against the stub's callback method, C in
# flight with no thread per call on either side.
GRPC_TARGET_PAIRS = [("raw", "outbound"), ("raw", "blocking"), ("raw", "by-name"),
                     ("stub-callback", "outbound-async")]
# The same forms against the raw stub making the same call with the same
# 10 s deadline that rpc::Client gives every attempt: the library's own cost.
GRPC_SAME_DEADLINE_PAIRS = [("raw-deadline", "outbound"), ("raw-deadline", "blocking"),
                            ("stub-callback-deadline", "outbound-async")]


def key(who):
    return who.replace("-", "_")


def grpc_section():
    """The gRPC row: medians across runs of each client, instructions per call
    (the median of its callgrind repeats), and the ratios, each the median of
    the runs' own ratios (a client against the baseline measured in the same
    run, so a machine that drifts between runs moves both), with the issue's
    targets beside them. Prints its table."""
    side = load_lines(os.path.join(work, "grpc.jsonl"))
    by_run = {}
    for row in side:
        by_run.setdefault(row["run"], {})[row["client"]] = row["result"]
    med = {}
    for who in GRPC_CLIENTS:
        runs = [r["result"] for r in side if r["client"] == who]
        med[who] = {
            "calls_per_second": statistics.median(r["calls_per_second"] for r in runs),
            "cpu_us_per_call": statistics.median(r["cpu_us_per_call"] for r in runs),
            "p50_ms": statistics.median(r["latency_ms"]["p50"] for r in runs),
            "p99_ms": statistics.median(r["latency_ms"]["p99"] for r in runs),
            "peak_rss_kb": statistics.median(r["peak_rss_kb"] for r in runs),
            "context_switches_per_call": statistics.median(r["context_switches_per_call"]
                                                           for r in runs),
            "runs": len(runs),
            "calls_per_second_each_run": [r["calls_per_second"] for r in runs],
            "cpu_us_per_call_each_run": [r["cpu_us_per_call"] for r in runs],
        }
    cg_per = {}
    for row in load_lines(os.path.join(work, "grpc_callgrind.jsonl")):
        small, large = row["counts"]
        cg_per.setdefault(row["client"], []).append((large - small) / (row["large"] - row["small"]))
    instr = {who: statistics.median(v) for who, v in cg_per.items()}

    def paired(who, base):
        """Throughput and CPU of `who` over `base`: the median of each run's ratio."""
        runs = [r for r in by_run.values() if who in r and base in r]
        return (statistics.median(ratio(r[who]["calls_per_second"], r[base]["calls_per_second"])
                                  for r in runs),
                statistics.median(ratio(r[who]["cpu_us_per_call"], r[base]["cpu_us_per_call"])
                                  for r in runs))

    rat = {}
    pairs = [(who, "raw") for who in ("raw-deadline", "outbound", "blocking", "by-name")]
    pairs += [(who, "raw-deadline") for who in ("outbound", "blocking", "by-name")]
    pairs += [("telemetry", "outbound"), ("raw", "async")]
    for who, base in pairs:
        name = f"{key(who)}_over_{key(base)}"
        rat[f"throughput_{name}"], rat[f"cpu_{name}"] = paired(who, base)
        if who in instr and base in instr:
            rat[f"instructions_{name}"] = ratio(instr[who], instr[base])
    pairs += [("outbound-async", "stub-callback"), ("stub-callback", "async")]
    for who, base in pairs[-2:]:
        name = f"{key(who)}_over_{key(base)}"
        rat[f"throughput_{name}"], rat[f"cpu_{name}"] = paired(who, base)
    for who, base in (("outbound-async", "stub-callback-deadline"),
                      ("stub-callback-deadline", "stub-callback")):
        if who in instr and base in instr:
            rat[f"instructions_{key(who)}_over_{key(base)}"] = ratio(instr[who], instr[base])

    # The paired runs: B over A, the median of the blocks' ratios.
    def pairs_of(name):
        return {f"{key(r['b'])}_over_{key(r['a'])}": {
            "throughput": r["throughput_ratio"], "cpu": r["cpu_ratio"],
            "a_calls_per_second": r["a_calls_per_second"],
            "b_calls_per_second": r["b_calls_per_second"],
            "a_cpu_us_per_call": r["a_cpu_us_per_call"], "b_cpu_us_per_call": r["b_cpu_us_per_call"],
            "blocks": r["blocks"], "calls_per_block": r["calls_per_block"]}
            for r in load_lines(os.path.join(work, name))}

    paired_ratios = pairs_of("grpc_paired.jsonl")
    # The same target pairs with the client on either CPU (the server pinned).
    unpinned_ratios = pairs_of("grpc_paired_unpinned.jsonl")

    # Each form in a process of its own: B over A, the median over the
    # alternations of B's process against A's beside it.
    def apart_of(name):
        rows = load_lines(os.path.join(work, name))
        out = {}
        for pair in dict.fromkeys(r["pair"] for r in rows):
            a, b = pair.split()

            def alone(who, rep, field):
                r = next(x["result"] for x in rows
                         if x["pair"] == pair and x["who"] == who and x["rep"] == rep)
                return (r["a_" + field] + r["b_" + field]) / 2

            reps = sorted({r["rep"] for r in rows if r["pair"] == pair})
            out[f"{key(b)}_over_{key(a)}"] = {
                field: statistics.median(alone(b, k, src) / alone(a, k, src) for k in reps)
                for field, src in (("throughput", "calls_per_second"), ("cpu", "cpu_us_per_call"))
            } | {"alternations": len(reps)}
        return out

    apart_ratios = apart_of("grpc_apart.jsonl")

    def judged(pair_list, ratios=paired_ratios):
        out, met = {}, {}
        for base, who in pair_list:
            name = f"{key(who)}_over_{key(base)}"
            got = ratios.get(name)
            if got is None:
                continue
            out[f"throughput_{name}"] = [">=", 0.95, got["throughput"]]
            out[f"cpu_{name}"] = ["<=", 1.10, got["cpu"]]
            if who in instr and base in instr:
                out[f"instructions_{name}"] = ["<=", 1.10, ratio(instr[who], instr[base])]
        for k, (op, bound, value) in out.items():
            met[k] = value >= bound if op == ">=" else value <= bound
        return out, met

    targets, met = judged(GRPC_TARGET_PAIRS)
    same_deadline, same_deadline_met = judged(GRPC_SAME_DEADLINE_PAIRS)
    unpinned, unpinned_met = judged(GRPC_TARGET_PAIRS, unpinned_ratios)
    apart, apart_met = judged(GRPC_TARGET_PAIRS, apart_ratios)

    print()
    print("gRPC, unary calls, 64 in flight (64 threads; async stub: one thread, one queue;"
          " stub cb. and outb.async: no thread per call)")
    print(f"{'':24}" + "".join(f"{GRPC_HEADS[w]:>11}" for w in GRPC_CLIENTS))
    rows = [("calls/s (median)", "calls_per_second", ".0f", 1),
            ("CPU us/call (user+sys)", "cpu_us_per_call", ".1f", 1),
            ("p50 latency ms", "p50_ms", ".2f", 1), ("p99 latency ms", "p99_ms", ".2f", 1),
            ("context switches/call", "context_switches_per_call", ".2f", 1),
            ("peak RSS MiB", "peak_rss_kb", ".1f", 1024)]
    for label, field, fmt, scale in rows:
        print(f"{label:24}" + "".join(f"{med[w][field] / scale:>11{fmt}}" for w in GRPC_CLIENTS))
    print(f"{'instructions/call':24}" +
          "".join(f"{instr[w]:>11.0f}" if w in instr else f"{'':>11}" for w in GRPC_CLIENTS))
    print()
    print("Pairs (one process, alternating blocks; the median of the blocks' ratios):")
    for name, got in paired_ratios.items():
        print(f"  {name}: throughput {got['throughput']:.3f}x, CPU {got['cpu']:.3f}x")

    def show(title, judged_targets, judged_met):
        print(title)
        for k, (op, bound, value) in judged_targets.items():
            print(f"  {k}: {value:.3f}x (target {op} {bound:.2f}x: "
                  f"{'met' if judged_met[k] else 'NOT met'})")

    show("Issue 14's targets, against the raw stub with no deadline:", targets, met)
    show("The same bounds against the raw stub with the same 10 s deadline (the library's own cost):",
         same_deadline, same_deadline_met)
    show("Issue 14's targets with the client on either CPU (the server pinned):",
         unpinned, unpinned_met)
    show("Issue 14's targets, each form in a process of its own (alternating processes):",
         apart, apart_met)
    print(f"telemetry on / off: throughput "
          f"{rat['throughput_telemetry_over_outbound']:.2f}x, CPU "
          f"{rat['cpu_telemetry_over_outbound']:.2f}x; raw stub (64 threads) / async stub: "
          f"throughput {rat['throughput_raw_over_async']:.2f}x, CPU {rat['cpu_raw_over_async']:.2f}x")
    return {"side_by_side": med, "instructions_per_call": instr,
            "instructions_per_call_each_repeat": cg_per, "ratios": rat,
            "paired": paired_ratios, "targets": targets, "targets_met": met,
            "same_deadline": same_deadline, "same_deadline_met": same_deadline_met,
            "paired_client_unpinned": unpinned_ratios, "targets_client_unpinned": unpinned,
            "targets_client_unpinned_met": unpinned_met,
            "apart": apart_ratios, "targets_apart": apart, "targets_apart_met": apart_met,
            "calls_per_run": side[0]["result"]["calls"]}


if only == "grpc":
    grpc = grpc_section()
    grpc.update({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 "commit": commit, "quick": quick})
    if quick:
        out = os.path.join(work, "results.json")
        with open(out, "w") as f:
            json.dump({"grpc": grpc}, f, indent=2)
    else:  # the gRPC part of the last full run's results, the rest kept
        out = "bench/results.json"
        results = json.load(open(out)) if os.path.exists(out) else {}
        results["grpc"] = grpc
        with open(out, "w") as f:
            json.dump(results, f, indent=2)
    print(f"\nwritten: {out}" + (" (quick runs never overwrite bench/results.json)" if quick else ""))
    sys.exit(0)


side = load_lines(os.path.join(work, "side.jsonl"))
clients = ["raw", "outbound", "telemetry", "native", "h2load"]
median = {}
for who in clients:
    runs = [r["result"] for r in side if r["client"] == who]
    median[who] = {
        "calls_per_second": statistics.median(r["calls_per_second"] for r in runs),
        "cpu_us_per_call": statistics.median(r["cpu_us_per_call"] for r in runs),
        "p50_ms": statistics.median(r["latency_ms"]["p50"] for r in runs),
        "p99_ms": statistics.median(r["latency_ms"].get("p99", float("nan")) for r in runs),
        "peak_rss_kb": statistics.median(r["peak_rss_kb"] for r in runs),
        "runs": len(runs),
    }

h1 = load_lines(os.path.join(work, "side_h1.jsonl"))
median_h1 = {}
for who in ("raw", "outbound", "native"):
    runs = [r["result"] for r in h1 if r["client"] == who]
    median_h1[who] = {
        "calls_per_second": statistics.median(r["calls_per_second"] for r in runs),
        "cpu_us_per_call": statistics.median(r["cpu_us_per_call"] for r in runs),
        "p50_ms": statistics.median(r["latency_ms"]["p50"] for r in runs),
        "p99_ms": statistics.median(r["latency_ms"]["p99"] for r in runs),
        "runs": len(runs),
    }

outage = json.load(open(os.path.join(work, "outage.json")))
soak = json.load(open(os.path.join(work, "soak.json")))
soak_native = json.load(open(os.path.join(work, "soak_native.json")))
over_limit = json.load(open(os.path.join(work, "over_limit.json")))


def quarters(samples):
    quarter = max(1, len(samples) // 4)
    return statistics.mean(samples[:quarter]), statistics.mean(samples[-quarter:])


samples = soak["rss_kb_samples"]
first, last = quarters(samples)
first_native, last_native = quarters(soak_native["rss_kb_samples"])
cg = json.load(open(os.path.join(work, "callgrind.json")))
per_call = {who: (cg[who][1] - cg[who][0]) / (cg["large"] - cg["small"])
            for who in ("raw", "outbound", "telemetry", "native", "h2load")}
micro = json.load(open(os.path.join(work, "micro.json")))
micro_rows = {}
for b in micro["benchmarks"]:
    if b.get("aggregate_name", "median") == "median" or "aggregate_name" not in b:
        name = b.get("run_name", b["name"])
        micro_rows[name] = {"ns": b["cpu_time"], "allocs_per_op": b.get("allocs/op", 0.0)}

o, r, h, t, n = (median["outbound"], median["raw"], median["h2load"], median["telemetry"],
                 median["native"])


ratios = {
    "throughput_outbound_over_raw": ratio(o["calls_per_second"], r["calls_per_second"]),
    "cpu_outbound_over_raw": ratio(o["cpu_us_per_call"], r["cpu_us_per_call"]),
    "instructions_outbound_over_raw": ratio(per_call["outbound"], per_call["raw"]),
    "throughput_outbound_over_h2load": ratio(o["calls_per_second"], h["calls_per_second"]),
    "cpu_outbound_over_h2load": ratio(o["cpu_us_per_call"], h["cpu_us_per_call"]),
    "throughput_raw_over_h2load": ratio(r["calls_per_second"], h["calls_per_second"]),
    # Telemetry on (a span per attempt, every metric, a Prometheus exposer)
    # over off, both on the default (native) transport.
    "throughput_telemetry_over_native": ratio(t["calls_per_second"], n["calls_per_second"]),
    "cpu_telemetry_over_native": ratio(t["cpu_us_per_call"], n["cpu_us_per_call"]),
    "instructions_telemetry_over_native": ratio(per_call["telemetry"], per_call["native"]),
    "throughput_native_over_raw": ratio(n["calls_per_second"], r["calls_per_second"]),
    "cpu_native_over_h2load": ratio(n["cpu_us_per_call"], h["cpu_us_per_call"]),
    "instructions_native_over_raw": ratio(per_call["native"], per_call["raw"]),
    "instructions_native_over_h2load": ratio(per_call["native"], per_call["h2load"]),
    "throughput_native_over_raw_http1": ratio(median_h1["native"]["calls_per_second"],
                                              median_h1["raw"]["calls_per_second"]),
}
results = {
    "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    "commit": commit,
    "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
    "quick": quick,
    "side_by_side": median,
    "side_by_side_http1_nginx": median_h1,
    "ratios": ratios,
    "instructions_per_call": per_call,
    "outage": outage,
    "memory": {"calls": soak["calls"], "rss_kb_first_quarter": first, "rss_kb_last_quarter": last,
               "growth": last / first - 1, "samples_kb": samples},
    # Peak RSS of `outbound call` under 100 MiB sent without a length, limit
    # 64 MiB, beside the same process's peak for a 100-byte body.
    "memory_over_limit": over_limit,
    "memory_native": {"calls": soak_native["calls"], "rss_kb_first_quarter": first_native,
                      "rss_kb_last_quarter": last_native, "growth": last_native / first_native - 1,
                      "samples_kb": soak_native["rss_kb_samples"]},
    "micro": micro_rows,
}

print()
# `outbound` is the client on libcurl (kCurl); `native` on its default transport.
print(f"{'':28}{'raw libcurl':>14}{'on libcurl':>14}{'native':>14}{'h2load':>14}")
print(f"{'calls/s':28}{r['calls_per_second']:>14.0f}{o['calls_per_second']:>14.0f}{n['calls_per_second']:>14.0f}{h['calls_per_second']:>14.0f}")
print(f"{'CPU us/call (user+sys)':28}{r['cpu_us_per_call']:>14.1f}{o['cpu_us_per_call']:>14.1f}{n['cpu_us_per_call']:>14.1f}{h['cpu_us_per_call']:>14.1f}")
print(f"{'p50 latency ms':28}{r['p50_ms']:>14.2f}{o['p50_ms']:>14.2f}{n['p50_ms']:>14.2f}{h['p50_ms']:>14.2f}")
print(f"{'p99 latency ms':28}{r['p99_ms']:>14.2f}{o['p99_ms']:>14.2f}{n['p99_ms']:>14.2f}{'':>14}")
print(f"{'peak RSS MiB':28}{r['peak_rss_kb']/1024:>14.1f}{o['peak_rss_kb']/1024:>14.1f}{n['peak_rss_kb']/1024:>14.1f}{h['peak_rss_kb']/1024:>14.1f}")
print(f"{'instructions/call':28}{per_call['raw']:>14.0f}{per_call['outbound']:>14.0f}{per_call['native']:>14.0f}{per_call['h2load']:>14.0f}")
print()
print(f"outbound on libcurl / raw libcurl: throughput {ratios['throughput_outbound_over_raw']:.2f}x, "
      f"CPU {ratios['cpu_outbound_over_raw']:.2f}x, instructions {ratios['instructions_outbound_over_raw']:.2f}x")
print(f"telemetry on / off (native): throughput {ratios['throughput_telemetry_over_native']:.2f}x, "
      f"CPU {ratios['cpu_telemetry_over_native']:.2f}x, "
      f"instructions {ratios['instructions_telemetry_over_native']:.3f}x "
      f"({per_call['telemetry']:.0f} per call)")
print(f"outbound / h2load: throughput {ratios['throughput_outbound_over_h2load']:.2f}x, "
      f"CPU {ratios['cpu_outbound_over_h2load']:.2f}x (raw libcurl / h2load: {ratios['throughput_raw_over_h2load']:.2f}x)")
print(f"native / raw libcurl: throughput {ratios['throughput_native_over_raw']:.2f}x, "
      f"instructions {ratios['instructions_native_over_raw']:.2f}x; native / h2load: CPU "
      f"{ratios['cpu_native_over_h2load']:.2f}x, instructions {ratios['instructions_native_over_h2load']:.2f}x")
r1, o1, n1 = median_h1["raw"], median_h1["outbound"], median_h1["native"]
print(f"HTTP/1.1 over TLS (nginx): raw {r1['calls_per_second']:.0f} calls/s {r1['cpu_us_per_call']:.1f} us/call, "
      f"outbound {o1['calls_per_second']:.0f} calls/s {o1['cpu_us_per_call']:.1f} us/call, "
      f"native {n1['calls_per_second']:.0f} calls/s {n1['cpu_us_per_call']:.1f} us/call: "
      f"outbound/raw throughput {ratio(o1['calls_per_second'], r1['calls_per_second']):.2f}x, "
      f"CPU {ratio(o1['cpu_us_per_call'], r1['cpu_us_per_call']):.2f}x; native/raw throughput "
      f"{ratio(n1['calls_per_second'], r1['calls_per_second']):.2f}x")
print(f"outage, attempts per call: default budget {outage['attempts_per_call_default_budget']:.2f}, "
      f"unlimited budget {outage['attempts_per_call_unlimited_budget']:.2f}")
print(f"memory over {soak['calls']} calls: RSS {first/1024:.1f} MiB (first quarter) -> "
      f"{last/1024:.1f} MiB (last quarter), {100*(last/first-1):+.1f}%; native "
      f"{first_native/1024:.1f} -> {last_native/1024:.1f} MiB, {100*(last_native/first_native-1):+.1f}%")
ol = over_limit
print(f"peak RSS under 100 MiB without a length, limit 64 MiB (small body {ol['small_body_kb']/1024:.1f} MiB): "
      f"native h1 {ol['native_h1_kb']/1024:.1f}, h2 {ol['native_h2_kb']/1024:.1f} MiB; "
      f"curl h1 {ol['curl_h1_kb']/1024:.1f}, h2 {ol['curl_h2_kb']/1024:.1f} MiB "
      f"(bound: small body + limit + 1 MiB = {(ol['small_body_kb'] + ol['limit_kb'])/1024 + 1:.1f} MiB)")
for name, row in micro_rows.items():
    print(f"  {name:44}{row['ns']:8.1f} ns  allocs/op {row['allocs_per_op']:.2g}")
results["grpc"] = grpc_section()

out = "bench/results.json" if not quick else os.path.join(work, "results.json")
with open(out, "w") as f:
    json.dump(results, f, indent=2)
print(f"\nwritten: {out}" + (" (quick runs never overwrite bench/results.json)" if quick else ""))
