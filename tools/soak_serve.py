"""A soak of `clinseg serve`: steady uploads for a while, the server's memory and open files sampled as it goes.

    python tools/soak_serve.py --minutes 10          # the figures for a release note
    python tools/soak_serve.py --uploads 200         # bounded by count instead

The server runs on 127.0.0.1 (a free port) on the DSB 2018 demo's data, in a temporary folder removed at the end.
Four clients upload in turn at a steady rate (valid files, every fifth one invalid) as 20 students; each sample
line gives the uploads so far and the server's resident memory and open file descriptors (its own process; its
checking and scoring processes are separate). The last line compares the first sample after warm-up with the last.
"""
import argparse, os, re, shutil, signal, subprocess, sys, tempfile, threading, time
from pathlib import Path


def _rss_mb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"): return int(line.split()[1]) / 1024
    return float("nan")


def _fds(pid): return len(os.listdir(f"/proc/{pid}/fd"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=10, help="how long to upload (default 10)")
    p.add_argument("--uploads", type=int, help="or: stop after this many uploads")
    p.add_argument("--every", type=float, default=30, help="seconds between samples (default 30)")
    p.add_argument("--rate", type=float, default=4, help="uploads a second, all clients together (default 4)")
    a = p.parse_args(argv)
    from clinseg.accounts import add_user
    from clinseg.database import connect
    from clinseg.demo import run_demo
    from clinseg.serve import request
    tmp = Path(tempfile.mkdtemp(prefix="clinseg-soak-"))
    try:
        demo = run_demo(tmp / "demo", ["dsb2018"], quiet=True).runs[0]
        rows = demo.submission.read_text().splitlines()
        bad = tmp / "bad.csv"
        bad.write_text(rows[0] + "\n" + rows[1].replace(",", ".png,", 1) + "\n")
        db = f"sqlite:///{tmp / 'board.sqlite'}"
        engine = connect(db)
        tokens = [add_user(engine, f"s{k:02d}") for k in range(20)]
        engine.dispose()
        server = subprocess.Popen([sys.executable, "-m", "clinseg.serve", "serve", "-c", "dsb2018", "-s",
                                   str(demo.solution), "--db", db, "--port", "0", "--daily-limit", "100000",
                                   "--invalid-limit", "100000", "--uploads", str(tmp / "uploads")],
                                  stderr=subprocess.PIPE, text=True, start_new_session=True)
        line = server.stderr.readline()
        while line and not line.startswith("clinseg serve:"): line = server.stderr.readline()
        url = re.search(r" on (http://\S+?)/ ", line).group(1)
        threading.Thread(target=server.stderr.read, daemon=True).start()
        stop, count, lock, answers = threading.Event(), [0], threading.Lock(), {}
        def client(k):
            while not stop.is_set():
                with lock:
                    n = count[0]
                    count[0] += 1
                if a.uploads is not None and n >= a.uploads: return
                pause = t0 + n / a.rate - time.monotonic()   # a steady pace: upload n is due at n / rate seconds
                if pause > 0: time.sleep(pause)
                f = bad if n % 5 == 4 else demo.submission
                status = request(url, "/api/submissions", tokens[n % len(tokens)], file=f, timeout=120)[0]
                with lock: answers[status] = answers.get(status, 0) + 1
        threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(4)]
        t0 = time.monotonic()
        for t in threads: t.start()
        samples = []
        print(f"{'minutes':>8} {'uploads':>8} {'rss MB':>8} {'fds':>5}", flush=True)
        while True:
            done = (a.uploads is not None and count[0] >= a.uploads) or \
                (a.uploads is None and time.monotonic() - t0 >= a.minutes * 60)
            s = ((time.monotonic() - t0) / 60, min(count[0], a.uploads or count[0]), _rss_mb(server.pid),
                 _fds(server.pid))
            samples.append(s)
            print(f"{s[0]:8.2f} {s[1]:8d} {s[2]:8.1f} {s[3]:5d}", flush=True)
            if done: break
            time.sleep(a.every if a.uploads is None else 1)
        stop.set()
        for t in threads: t.join(180)
        first = samples[min(1, len(samples) - 1)]
        last = samples[-1]
        print(f"answers {dict(sorted(answers.items()))}; after warm-up rss {first[2]:.1f} -> {last[2]:.1f} MB, "
              f"fds {first[3]} -> {last[3]}", flush=True)
        server.send_signal(signal.SIGINT)
        server.wait(60)
    finally: shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__": main()
