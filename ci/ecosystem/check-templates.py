#!/usr/bin/env python3
"""Checks the CI templates where actionlint does not reach (run by .ci/run, after actionlint).

- action.yml (a composite action's metadata, which actionlint does not lint by itself): fields,
  inputs and outputs; every `run:` step has a shell, takes inputs through `env:` only (no `${{ }}`
  in scripts) and passes shellcheck; the `env` input (the secrets) reaches the suite's step only;
  `uses:` majors run on node24; the fallback repository is Cargo.toml's `repository`.
- ci/github-actions.yml: `uses:` the action as owner/name of Cargo.toml's `repository`; secrets
  only in that step's `with:`; then actionlint again on a copy that uses the action as `./`, which
  checks its `with:` against action.yml's inputs.
- ci/gitlab-ci.yml: parses; JUnit report, artifacts kept on failure, the suite's exit code kept,
  the script passes shellcheck (POSIX sh).

usage (from anywhere): python3 ci/ecosystem/check-templates.py
Uses `shellcheck` and `actionlint` from PATH when there (.ci/run installs both); exits 1 on any
problem.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.chdir(ROOT)
problems = []


def problem(where, what):
    problems.append(f"{where}: {what}")


# The first major of each action that runs on node24 (the node20 ones are deprecated on GitHub's
# runners); the templates must use at least these.
NODE24_MAJORS = {
    "actions/checkout": 5,
    "actions/cache": 5,
    "actions/upload-artifact": 6,
    "mikepenz/action-junit-report": 6,
}


def check_uses(where, uses):
    m = re.fullmatch(r"([\w.-]+/[\w.-]+)(?:/[\w./-]+)?@v(\d+)", uses)
    if not m:
        if not uses.startswith("./"):
            problem(where, f"`uses: {uses}`: pin a major tag (owner/name@vN)")
        return
    floor = NODE24_MAJORS.get(m[1])
    if floor and int(m[2]) < floor:
        problem(where, f"`uses: {uses}`: a node20 major; use @v{floor} or newer")


SHELLCHECK = shutil.which("shellcheck")


def shellcheck(where, script, dialect, header=""):
    if not SHELLCHECK:
        return
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
        f.write(header + script)
        path = f.name
    try:
        out = subprocess.run(
            [SHELLCHECK, "-s", dialect, "-f", "gcc", path], capture_output=True, text=True
        )
        for line in out.stdout.splitlines():
            problem(where, "shellcheck: " + line.replace(path, "script"))
    finally:
        os.unlink(path)


cargo = tomllib.load(open("Cargo.toml", "rb"))
repository = cargo["workspace"]["package"].get("repository", "")
m = re.fullmatch(r"https://github\.com/([\w.-]+/[\w.-]+)", repository)
if not m:
    problem("Cargo.toml", f"[workspace.package] repository is not a GitHub URL: {repository!r}")
owner_name = m[1] if m else "?"

# --- action.yml ------------------------------------------------------------------------------------
A = "action.yml"
action = yaml.safe_load(open(A))
for key in ("name", "description", "inputs", "outputs", "runs"):
    if not action.get(key):
        problem(A, f"no `{key}`")
inputs = action.get("inputs") or {}
want_inputs = {
    "profile": {"required": True},
    "level": {"default": "seed"},
    "require-all": {"default": "false"},
    "version": {},
    "reports-dir": {"default": "chataigne-reports"},
    "extra-args": {},
    "env": {},
}
for name, fields in want_inputs.items():
    got = inputs.get(name)
    if got is None:
        problem(A, f"no input `{name}`")
        continue
    for field, value in fields.items():
        if got.get(field) != value:
            problem(A, f"input `{name}`: {field} is {got.get(field)!r}, expected {value!r}")
for name, got in inputs.items():
    if not (got or {}).get("description"):
        problem(A, f"input `{name}` has no description")
runs = action.get("runs") or {}
if runs.get("using") != "composite":
    problem(A, "runs.using is not composite")
steps = runs.get("steps") or []
ids = [s.get("id") for s in steps if s.get("id")]
outputs = action.get("outputs") or {}
for name in ("exit-code", "verdict"):
    if name not in outputs:
        problem(A, f"no output `{name}`")
for name, out in outputs.items():
    for ref in re.findall(r"steps\.([\w-]+)\.outputs", str(out.get("value", ""))):
        if ref not in ids:
            problem(A, f"output `{name}` reads step `{ref}`, which does not exist")
seen = set()
env_steps = []
for i, step in enumerate(steps):
    where = f"{A} step {i + 1} ({step.get('name', '?')})"
    if not step.get("name"):
        problem(where, "no name")
    text = yaml.safe_dump(step)
    for ref in re.findall(r"steps\.([\w-]+)\.", text):
        if ref not in seen:
            problem(where, f"reads step `{ref}` before it runs (or it does not exist)")
    if re.search(r"\binputs\.env\b", text):
        env_steps.append(step.get("id") or step.get("name"))
    if "uses" in step:
        check_uses(where, step["uses"])
    if "run" in step:
        if step.get("shell") != "bash":
            problem(where, "a `run:` step needs `shell: bash`")
        if "${{" in step["run"]:
            problem(where, "`${{ }}` in a script: pass the value through `env:` (script injection)")
        # GitHub runs `bash --noprofile --norc -eo pipefail {0}`.
        shellcheck(where, step["run"], "bash", "#!/usr/bin/env bash\nset -eo pipefail\n")
    if step.get("id"):
        seen.add(step["id"])
if env_steps != ["run"]:
    problem(A, f"the `env` input (secrets) must reach only the step `run`; it reaches {env_steps}")
fallback = re.findall(r"repository=\$\{repository:-([^}]+)\}", open(A).read())
if fallback != [repository]:
    problem(A, f"the fallback repository {fallback} is not Cargo.toml's {repository!r}")

# --- ci/github-actions.yml -------------------------------------------------------------------------
W = "ci/github-actions.yml"
workflow = yaml.safe_load(open(W))
if (workflow.get("permissions") or {}).get("contents") != "read":
    problem(W, "permissions: contents: read is missing")
action_steps = 0
for job_name, job in (workflow.get("jobs") or {}).items():
    if "secrets." in yaml.safe_dump(job.get("env") or {}):
        problem(W, f"job {job_name}: secrets in the job's env (they would reach every step)")
    for i, step in enumerate(job.get("steps") or []):
        where = f"{W} job {job_name} step {i + 1}"
        uses = step.get("uses", "")
        if uses:
            check_uses(where, uses)
        if uses.split("@")[0] == owner_name:
            action_steps += 1
            rest = {k: v for k, v in step.items() if k != "with"}
            if "secrets." in yaml.safe_dump(rest):
                problem(where, "secrets outside the action's `with:`")
        elif "secrets." in yaml.safe_dump(step):
            problem(where, "secrets in a step other than the action's")
        elif uses.startswith("chataigne/") or "chataigne-conformance@" in uses:
            problem(where, f"`uses: {uses}` is not {owner_name} (Cargo.toml's repository)")
if "secrets." in yaml.safe_dump(workflow.get("env") or {}):
    problem(W, "secrets in the workflow's env")
if action_steps != 1:
    problem(W, f"expected one step that uses {owner_name}@..., found {action_steps}")
ACTIONLINT = shutil.which("actionlint")
if ACTIONLINT:
    with tempfile.TemporaryDirectory() as project:
        os.makedirs(os.path.join(project, ".github", "workflows"))
        os.makedirs(os.path.join(project, ".git"))  # actionlint looks for the project's root
        shutil.copy(A, project)
        text = re.sub(rf"uses: {re.escape(owner_name)}@\S+", "uses: ./", open(W).read())
        with open(os.path.join(project, ".github", "workflows", "conformance.yml"), "w") as f:
            f.write(text)
        out = subprocess.run(
            [ACTIONLINT, "-oneline"], cwd=project, capture_output=True, text=True
        )
        for line in (out.stdout + out.stderr).splitlines():
            problem(W + " (with the action as ./)", line)

# --- ci/gitlab-ci.yml ------------------------------------------------------------------------------
G = "ci/gitlab-ci.yml"
gitlab = yaml.safe_load(open(G))
job = gitlab.get("chataigne-conformance") or {}
if not job:
    problem(G, "no job chataigne-conformance")
artifacts = job.get("artifacts") or {}
if artifacts.get("when") != "always":
    problem(G, "artifacts.when is not always (reports of a failed run would be lost)")
junit = (artifacts.get("reports") or {}).get("junit")
if not junit:
    problem(G, "no artifacts.reports.junit")
script = "\n".join(job.get("script") or [])
if junit and junit not in script.replace('"$reports/', "chataigne-reports/"):
    problem(G, f"the JUnit report {junit} is not what the script writes")
if 'exit "$code"' not in script or "|| code=$?" not in script:
    problem(G, "the suite's exit code is not kept (code=... || code=$? ... exit \"$code\")")
if re.search(r"set -x|set -o xtrace", script):
    problem(G, "xtrace would print the tokens")
if (job.get("variables") or {}).get("CHATAIGNE_SUITE_GIT") != repository:
    problem(G, f"CHATAIGNE_SUITE_GIT is not Cargo.toml's repository {repository!r}")
shellcheck(G, "\n".join(job.get("before_script") or []) + "\n" + script, "sh", "#!/bin/sh\nset -e\n")

checked = "action.yml, ci/github-actions.yml, ci/gitlab-ci.yml"
tools = ", ".join(t for t, p in (("shellcheck", SHELLCHECK), ("actionlint", ACTIONLINT)) if p)
if problems:
    print("\n".join(problems))
    print(f"check-templates: {len(problems)} problems in {checked}")
    sys.exit(1)
print(f"check-templates: {checked} OK (with {tools or 'no external tool'})")
