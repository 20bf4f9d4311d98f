#!/usr/bin/env python3
"""Runs `docket audit --json` and verify_bundle.py on bundles and compares the
exit code and the multiset of (kind, severity, file, seq) findings (BUNDLE.md
§10.1). Usage: compare_docket.py [--docket BIN] [--trusted-key VKEY] BUNDLE...
Exit 0 when every bundle agrees."""
import argparse, collections, json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import verify_bundle as vb  # noqa: E402


def docket_audit(binary, bundle, tk):
    cmd = [binary, "--json", "audit", bundle] + (["--trusted-key", tk] if tk else [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    try:
        j = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        j = {}
    return p.returncode, j


def key(f):
    return (f["kind"], f["severity"], f["file"], f["seq"])


def compare(binary, bundle, tk):
    rc, j = docket_audit(binary, bundle, tk)
    rep = j.get("report", {})
    theirs = collections.Counter(key(f) for f in rep.get("findings", []))
    tkt = open(tk).read() if tk and os.path.isfile(tk) else tk
    a = vb.audit_bundle(bundle, tkt)
    mine = collections.Counter(key(f) for f in a.listed())
    t_om = rep.get("findings_omitted", 0)
    same = rc == a.exit_code() and (mine == theirs if not t_om and not a.omitted()
                                    else sum(theirs.values()) + t_om == len(a.findings))
    return same, rc, theirs, a.exit_code(), mine, a


def fmt(c):
    return ", ".join(f"{k[0]}:{k[2]}:{k[3]}" + (f"x{n}" if n > 1 else "") for k, n in sorted(c.items(), key=str))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docket", default=os.path.join(HERE, "..", "..", "target", "release", "docket"))
    ap.add_argument("--trusted-key")
    ap.add_argument("-q", action="store_true")
    ap.add_argument("bundles", nargs="+")
    a = ap.parse_args()
    bad = 0
    for b in a.bundles:
        same, rc, theirs, mine_rc, mine, _ = compare(a.docket, b, a.trusted_key)
        bad += not same
        if not same or not a.q:
            print(f"DIFF {b}\n   docket {rc}: {fmt(theirs)}\n   mine   {mine_rc}: {fmt(mine)}"
                  if not same else f"SAME {b}  exit {rc}: {fmt(theirs)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
