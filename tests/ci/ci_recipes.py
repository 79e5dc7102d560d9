#!/usr/bin/env python3
"""Checks the CI recipes of docs/ci.md and the repository's .pre-commit-hooks.yaml.

    ci_recipes.py extract PAGE DIR        write each block marked <!-- recipe: NAME --> to DIR/NAME
    ci_recipes.py check PAGE HOOKS GPUMEM [LINT_SAMPLE_DIR]

check: every YAML recipe parses and has what its service needs; every `gpumem` command in
them names a subcommand the built GPUMEM has and only options its --help lists; with a
LINT_SAMPLE_DIR (and gpumem lint built) the lint commands run there and the SARIF is valid.
Prints one line a check; exit status 1 when one fails.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

MARK = re.compile(r"^<!--\s*recipe:\s*([\w.\-]+)\s*-->\s*$")


def recipes(page):
    lines = open(page, encoding="utf-8").read().split("\n")
    out = {}
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if m:
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            k = j + 1
            while not lines[k].startswith("```"):
                k += 1
            out[m.group(1)] = "\n".join(lines[j + 1:k]) + "\n"
            i = k
        i += 1
    return out


failures = 0


def check(what, ok, detail=""):
    global failures
    print(("ok   " if ok else "FAIL ") + what + ("" if ok or not detail else ": " + detail))
    if not ok:
        failures += 1


def gpumem_commands(text):
    """The `gpumem ...` command lines in a shell script text."""
    cmds = []
    for line in text.split("\n"):
        line = line.strip().lstrip("- ").strip()
        for part in re.split(r"&&|\|\||;", line):
            part = part.strip()
            if part.startswith("gpumem "):
                cmds.append(shlex.split(part))
    return cmds


def help_options(gpumem, cmd):
    run = subprocess.run([gpumem, cmd, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if run.returncode != 0:
        return None
    opts = set()
    for line in run.stdout.decode().split("\n"):
        if re.match(r"^ +-", line):
            head = re.split(r"   |  [a-z(]", line.strip())[0]
            opts.update(re.findall(r"(?:^|[ ,])(--?[A-Za-z][A-Za-z-]*)", head))
    return opts


def check_command(where, argv, gpumem):
    cmd = argv[1]
    opts = help_options(gpumem, cmd)
    if opts is None:
        built = subprocess.run([gpumem, "--help"], stdout=subprocess.PIPE).stdout.decode()
        if cmd == "lint" and "  lint " not in built:
            print("skip %s: gpumem lint is not built here: %s" % (where, " ".join(argv)))
            return False
        check("%s: gpumem %s exists" % (where, cmd), False, "`gpumem %s --help` failed" % cmd)
        return False
    args = argv[2:argv.index("--")] if "--" in argv else argv[2:]
    bad = [a.split("=")[0] for a in args if a.startswith("-") and a.split("=")[0] not in opts]
    check("%s: %s" % (where, " ".join(argv)), not bad, "not in `gpumem %s --help`: %s" % (cmd, " ".join(bad)))
    return True


def steps_text(steps):
    return "\n".join(s.get("run", "") for s in steps if isinstance(s, dict))


def main(argv):
    if len(argv) == 4 and argv[1] == "extract":
        os.makedirs(argv[3], exist_ok=True)
        for name, text in recipes(argv[2]).items():
            with open(os.path.join(argv[3], name), "w") as f:
                f.write(text)
        return 0
    if len(argv) not in (5, 6) or argv[1] != "check":
        print(__doc__, file=sys.stderr)
        return 2
    import yaml  # python3-yaml; `extract` works without it
    page, hooks_path, gpumem = argv[2], argv[3], os.path.abspath(argv[4])
    sample = argv[5] if len(argv) == 6 else None
    r = recipes(page)
    for name in ("github-workflow.yml", "gitlab-ci.yml", "pre-commit-config.yaml", "CMakeLists.txt", "app.c"):
        check("recipe %s is on the page" % name, name in r)
    docs = {}
    for name in ("github-workflow.yml", "gitlab-ci.yml", "pre-commit-config.yaml"):
        try:
            docs[name] = yaml.safe_load(r.get(name, ""))
            check("%s parses" % name, isinstance(docs[name], (dict, list)))
        except yaml.YAMLError as e:
            check("%s parses" % name, False, str(e))
            docs[name] = None
    try:
        hooks = yaml.safe_load(open(hooks_path))
        check(".pre-commit-hooks.yaml parses", isinstance(hooks, list))
    except (OSError, yaml.YAMLError) as e:
        check(".pre-commit-hooks.yaml parses", False, str(e))
        hooks = []

    lint_runs = []
    gh = docs.get("github-workflow.yml") or {}
    # YAML 1.1 reads the key `on` as True.
    triggers = gh.get("on", gh.get(True))
    check("workflow: runs on push and pull_request", isinstance(triggers, dict) and
          {"push", "pull_request"} <= set(triggers))
    check("workflow: may write security events", (gh.get("permissions") or {}).get("security-events") == "write")
    steps = [s for job in (gh.get("jobs") or {}).values() for s in job.get("steps", [])]
    upload = [s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@")]
    check("workflow: uploads SARIF with github/codeql-action/upload-sarif", len(upload) == 1)
    sarif_runs = [c for c in gpumem_commands(steps_text(steps)) if "--format=sarif" in c]
    check("workflow: one lint step writes SARIF", len(sarif_runs) == 1)
    if upload and sarif_runs:
        c = sarif_runs[0]
        out = c[c.index("-o") + 1] if "-o" in c else None
        check("workflow: the uploaded file is the one lint writes",
              out is not None and upload[0].get("with", {}).get("sarif_file") == out,
              "lint writes %s, upload-sarif reads %s" % (out, upload[0].get("with", {}).get("sarif_file")))
    for c in gpumem_commands(steps_text(steps)):
        if check_command("workflow", c, gpumem) and c[1] == "lint":
            lint_runs.append(c)

    gl = docs.get("gitlab-ci.yml") or {}
    jobs = {k: v for k, v in gl.items() if not k.startswith(".") and isinstance(v, dict)}
    check("gitlab: a lint job and a check job", {"gpumem-lint", "gpumem-check"} <= set(jobs))
    for name, job in jobs.items():
        base = gl.get(job.get("extends", ""), {}) if isinstance(job.get("extends"), str) else {}
        script = job.get("script") or []
        check("gitlab %s: has a script and an image" % name, bool(script) and bool(job.get("image") or base.get("image")))
        for c in gpumem_commands("\n".join(base.get("before_script", []) + script)):
            if check_command("gitlab " + name, c, gpumem) and c[1] == "lint":
                lint_runs.append(c)
    check("gitlab gpumem-check: runs on a GPU runner", "gpu" in (jobs.get("gpumem-check", {}).get("tags") or []))
    check("gitlab gpumem-lint: keeps the SARIF file", "gpumem-lint.sarif" in
          ((jobs.get("gpumem-lint", {}).get("artifacts") or {}).get("paths") or []))

    ids = set()
    for h in hooks or []:
        ids.add(h.get("id"))
        check("hook %s: has id, name, entry, language" % h.get("id"), all(h.get(k) for k in ("id", "name", "entry", "language")))
        check("hook %s: language is system (the installed gpumem)" % h.get("id"), h.get("language") == "system")
        try:
            rx = re.compile(h.get("files", ""))
            check("hook %s: files matches .cu, .cuh, .c, .cpp and not .py" % h.get("id"),
                  all(rx.search(f) for f in ("a.cu", "b/c.cuh", "d.c", "e.cpp")) and not rx.search("f.py"))
        except re.error as e:
            check("hook %s: files is a regular expression" % h.get("id"), False, str(e))
        entry = shlex.split(h.get("entry", ""))
        if entry[:1] == ["gpumem"]:
            if check_command("hook " + h.get("id", "?"), entry, gpumem) and entry[1] == "lint":
                lint_runs.append(entry + ["src/"])
    cfg = docs.get("pre-commit-config.yaml") or {}
    used = [hk.get("id") for repo in cfg.get("repos", []) for hk in repo.get("hooks", [])]
    check("pre-commit config: uses hooks the hooks file defines", bool(used) and set(used) <= ids,
          "uses %s, defined %s" % (used, sorted(ids)))

    if sample and lint_runs:
        with tempfile.TemporaryDirectory() as d:
            os.symlink(os.path.abspath(sample), os.path.join(d, "src"))
            for c in lint_runs:
                run = subprocess.run([gpumem] + c[1:], cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                check("runs: %s" % " ".join(c), run.returncode in (0, 1), run.stdout.decode()[-500:])
                if "--format=sarif" in c and "-o" in c:
                    try:
                        sarif = json.load(open(os.path.join(d, c[c.index("-o") + 1])))
                        check("SARIF of %s is version 2.1.0" % " ".join(c), sarif.get("version") == "2.1.0")
                    except (OSError, ValueError) as e:
                        check("SARIF of %s is JSON" % " ".join(c), False, str(e))
    print("ci recipes: %d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
