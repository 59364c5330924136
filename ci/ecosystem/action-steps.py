#!/usr/bin/env python3
"""Runs the GitHub Action (action.yml) as a workflow step `uses: ./` would, against the reference
server, and checks what it leaves (run by .ci/run after scripts/test; GitHub itself is out of
reach here).

The inputs are those of the action's step in the example workflow ci/github-actions.yml (the
one check-templates.py lints with the action as `./`), its `${{ secrets.* }}` given the
development tokens of ci/profile.reference.toml, plus `suite-binary` pointing at the suite built
by scripts/test (so the install step links it instead of running `cargo install`). The profile
the workflow names is written into a temporary workspace: ci/profile.reference.toml's settings,
its tokens as `env:` names as the workflow's comments ask, and a free port. The reference server
is started with the flags that profile's header gives.

Each composite step runs in order with `bash --noprofile --norc -eo pipefail`, in the workspace,
with `${{ inputs.* }}`, `${{ github.* }}`, `${{ runner.* }}` and `${{ steps.*.outputs.* }}`
substituted and `if:` conditions evaluated; any other expression fails the check at once.
GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, GITHUB_ENV and GITHUB_PATH are files in a temporary
directory; HOME is one too. `uses:` steps (cache, artifact upload) are not run: each is named as
skipped, with its expressions still evaluated.

Two runs: the workflow's inputs (certified: exit-code 0, verdict certified, the Markdown matrix
in the job summary, every report in reports-dir, no token in any step's output); then the same
with the owner's secret empty (could-not-start: exit-code 2, the summary and every report say
why, the gate step fails with 2).

usage: python3 ci/ecosystem/action-steps.py [--suite PATH] [--mock PATH]
(defaults: target/debug/chataigne-conformance, target/debug/chataigne-mock). Needs PyYAML.
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.request

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.chdir(ROOT)


class Unknown(Exception):
    """An expression or a step this runner does not know: the check fails rather than guess."""


# --- GitHub expressions (the subset action.yml uses; anything else is Unknown) -------------------
TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||!|\(|\)|,)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_*][A-Za-z0-9_-]*)*))"
)


def tokens(text):
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise Unknown(f"cannot read the expression {text!r} at {text[pos:]!r}")
        pos = m.end()
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
    return out


def number(v):
    """GitHub's loose conversion for comparing values of different types."""
    if v is None:
        return 0.0
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(v) if v.strip() else 0.0
    except ValueError:
        return float("nan")


def equal(a, b):
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()
    if type(a) is type(b):
        return a == b
    return number(a) == number(b)


def truthy(v):
    return v not in (None, False, 0, 0.0, "") and v == v


class Expression:
    """A recursive-descent evaluator: || over && over ==/!= over ! over primaries."""

    def __init__(self, text, lookup, status):
        self.text, self.lookup, self.status = text, lookup, status
        self.toks = tokens(text)
        self.i = 0

    def value(self):
        v = self.alternative()
        if self.i != len(self.toks):
            raise Unknown(f"cannot read the expression {self.text!r}")
        return v

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, op=None):
        kind, text = self.peek()
        if op is not None and text != op:
            raise Unknown(f"expected {op!r} in {self.text!r}")
        self.i += 1
        return kind, text

    def alternative(self):
        v = self.conjunction()
        while self.peek()[1] == "||":
            self.take()
            right = self.conjunction()
            v = v if truthy(v) else right
        return v

    def conjunction(self):
        v = self.comparison()
        while self.peek()[1] == "&&":
            self.take()
            right = self.comparison()
            v = right if truthy(v) else v
        return v

    def comparison(self):
        v = self.negation()
        while self.peek()[1] in ("==", "!="):
            op = self.take()[1]
            right = self.negation()
            v = equal(v, right) if op == "==" else not equal(v, right)
        return v

    def negation(self):
        if self.peek()[1] == "!":
            self.take()
            return not truthy(self.negation())
        return self.primary()

    def primary(self):
        kind, text = self.take()
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return float(text)
        if text == "(":
            v = self.alternative()
            self.take(")")
            return v
        if kind == "name":
            if text in ("true", "false"):
                return text == "true"
            if text == "null":
                return None
            if self.peek()[1] == "(":
                if text not in ("always", "success", "failure", "cancelled"):
                    raise Unknown(f"the function {text}() in {self.text!r}")
                self.take("(")
                self.take(")")
                return self.function(text)
            return self.lookup(text)
        raise Unknown(f"cannot read the expression {self.text!r}")

    def function(self, name):
        if name == "always":
            return True
        if name == "success":
            return self.status == "success"
        if name == "failure":
            return self.status == "failure"
        if name == "cancelled":
            return False
        raise Unknown(f"function {name}() in {self.text!r}")


def substitute(text, lookup, status="success"):
    """`${{ expr }}` in a string, each replaced by its value as GitHub writes it."""

    def one(m):
        v = Expression(m.group(1), lookup, status).value()
        if v is None:
            return ""
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        return str(v)

    return re.sub(r"\$\{\{(.*?)\}\}", one, str(text), flags=re.S)


def condition(text, lookup, status):
    """An `if:` (with or without `${{ }}`); a condition without a status function implies success()."""
    text = str(text).strip()
    m = re.fullmatch(r"\$\{\{(.*)\}\}", text, flags=re.S)
    if m:
        text = m.group(1)
    if not re.search(r"\b(always|success|failure|cancelled)\s*\(", text):
        text = f"success() && ({text})"
    return truthy(Expression(text, lookup, status).value())


# --- The run of the action ----------------------------------------------------------------------
def read_outputs(path):
    """A GITHUB_OUTPUT (or GITHUB_ENV) file: name=value lines and name<<DELIMITER blocks."""
    out = {}
    if not os.path.exists(path):
        return out
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value = []
            while i < len(lines) and lines[i] != delimiter:
                value.append(lines[i])
                i += 1
            i += 1
            out[name] = "\n".join(value)
        elif "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
        else:
            raise Unknown(f"{path}: not a name=value line: {line[:60]!r}")
    return out


def run_action(action, inputs, workspace, temp, log):
    """Every step of the composite action in order; returns (outputs, steps, summary, skipped, output)."""
    home = os.path.join(temp, "home")
    runner_temp = os.path.join(temp, "runner-temp")
    for d in (home, runner_temp):
        os.makedirs(d, exist_ok=True)
    summary_path = os.path.join(temp, "step-summary.md")
    env_path = os.path.join(temp, "github-env")
    path_path = os.path.join(temp, "github-path")
    for p in (summary_path, env_path, path_path):
        open(p, "w").close()
    github = {
        # `uses: ./` runs the action from the workspace: GitHub gives no ref then.
        "action_ref": "",
        "action_path": ROOT,
        "workspace": workspace,
        "event_name": "push",
    }
    runner = {"os": "Linux", "arch": "X64", "temp": runner_temp, "name": "action-steps"}
    steps = {}

    def lookup(name):
        parts = name.split(".")
        ctx = parts[0]
        if ctx == "inputs" and len(parts) == 2:
            if parts[1] not in inputs:
                raise Unknown(f"inputs.{parts[1]}: not an input of action.yml")
            return inputs[parts[1]]
        if ctx == "github" and len(parts) == 2 and parts[1] in github:
            return github[parts[1]]
        if ctx == "runner" and len(parts) == 2 and parts[1] in runner:
            return runner[parts[1]]
        if ctx == "steps" and len(parts) == 4 and parts[2] == "outputs":
            if parts[1] not in steps:
                raise Unknown(f"{name}: no step {parts[1]} ran before")
            return steps[parts[1]]["outputs"].get(parts[3])
        if ctx == "steps" and len(parts) == 3 and parts[2] in ("outcome", "conclusion"):
            if parts[1] not in steps:
                raise Unknown(f"{name}: no step {parts[1]} ran before")
            return steps[parts[1]][parts[2]]
        raise Unknown(f"the expression {name} (only inputs.*, github.*, runner.*, steps.* are known)")

    status = "success"
    skipped = []
    output = []
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "INPUT_"))}
    base_env.update({"HOME": home, "CI": "true", "GITHUB_ACTIONS": "true"})
    for n, step in enumerate(action["runs"]["steps"], 1):
        name = step.get("name", f"step {n}")
        sid = step.get("id") or f"__step{n}"
        record = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
        if not condition(step.get("if", "success()"), lookup, status):
            log(f"-- {name}: skipped (if: {step.get('if')})")
            steps[sid] = record
            if "uses" in step:
                skipped.append(f"{name} (uses: {step['uses']}; its `if:` is false)")
            continue
        if "uses" in step:
            # Evaluated all the same, so an expression this runner does not know still fails it.
            with_ = {k: substitute(v, lookup, status) for k, v in (step.get("with") or {}).items()}
            log(f"-- {name}: NOT RUN here (uses: {step['uses']}, with {sorted(with_)})")
            skipped.append(f"{name} (uses: {step['uses']})")
            steps[sid] = record
            continue
        unknown_keys = set(step) - {"name", "id", "if", "shell", "env", "run"}
        if unknown_keys:
            raise Unknown(f"step {name}: {sorted(unknown_keys)}, which this runner does not do")
        if "run" not in step:
            raise Unknown(f"step {name}: neither run nor uses")
        if step.get("shell") != "bash":
            raise Unknown(f"step {name}: shell {step.get('shell')!r}, only bash is run here")
        env = dict(base_env)
        env.update(read_outputs(env_path))
        extra_path = [p for p in open(path_path).read().split("\n") if p]
        if extra_path:
            env["PATH"] = os.pathsep.join(extra_path + [env.get("PATH", "")])
        for k, v in (step.get("env") or {}).items():
            env[k] = substitute(v, lookup, status)
        out_path = os.path.join(temp, f"output-{n}")
        open(out_path, "w").close()
        env.update({
            "GITHUB_ACTION_PATH": ROOT,
            "GITHUB_WORKSPACE": workspace,
            "GITHUB_OUTPUT": out_path,
            "GITHUB_STEP_SUMMARY": summary_path,
            "GITHUB_ENV": env_path,
            "GITHUB_PATH": path_path,
            "RUNNER_OS": runner["os"],
            "RUNNER_ARCH": runner["arch"],
            "RUNNER_TEMP": runner_temp,
        })
        script = os.path.join(temp, f"step-{n}.sh")
        with open(script, "w") as f:
            # GitHub substitutes expressions in scripts too (check-templates.py forbids them there).
            f.write(substitute(step["run"], lookup, status))
        started = time.monotonic()
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", script],
            cwd=workspace, env=env, capture_output=True, text=True, timeout=900,
        )
        took = time.monotonic() - started
        text = proc.stdout + proc.stderr
        output.append(text)
        outcome = "success" if proc.returncode == 0 else "failure"
        record = {"outputs": read_outputs(out_path), "outcome": outcome, "conclusion": outcome, "code": proc.returncode}
        steps[sid] = record
        log(f"-- {name}: {outcome} (exit {proc.returncode}, {took:.1f} s)")
        for line in text.splitlines()[-12:]:
            log(f"   | {line}")
        if outcome == "failure":
            status = "failure"
    outputs = {k: substitute(v.get("value", ""), lookup, status) for k, v in action.get("outputs", {}).items()}
    return outputs, steps, open(summary_path).read(), skipped, "\n".join(output)


# --- The workspace, the server, the checks -------------------------------------------------------
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def toml_string(value):
    return json.dumps(value)  # a TOML basic string is a JSON string for these values


def workflow_step():
    """The step of ci/github-actions.yml that uses this repository's action."""
    repository = tomllib.load(open("Cargo.toml", "rb"))["workspace"]["package"]["repository"]
    owner_name = re.fullmatch(r"https://github\.com/([\w.-]+/[\w.-]+)", repository)[1]
    workflow = yaml.safe_load(open("ci/github-actions.yml"))
    found = [
        step
        for job in workflow["jobs"].values()
        for step in job.get("steps") or []
        if step.get("uses", "").split("@")[0] == owner_name
    ]
    if len(found) != 1:
        raise Unknown(f"ci/github-actions.yml: {len(found)} steps use {owner_name}, expected one")
    return found[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", default="target/debug/chataigne-conformance")
    parser.add_argument("--mock", default="target/debug/chataigne-mock")
    args = parser.parse_args()
    suite, mock = os.path.abspath(args.suite), os.path.abspath(args.mock)
    for binary in (suite, mock):
        if not os.access(binary, os.X_OK):
            sys.exit(f"action-steps: {binary} is missing: build it first (scripts/test does)")

    action = yaml.safe_load(open("action.yml"))
    step = workflow_step()
    reference = tomllib.load(open("ci/profile.reference.toml", "rb"))
    tokens = reference["tokens"]
    # The workflow passes one secret per persona, CHATAIGNE_TOKEN_<PERSONA>.
    secrets = {f"CHATAIGNE_TOKEN_{p.upper()}": t for p, t in tokens.items()}
    secret_values = set(tokens.values())

    passed, failed = 0, 0

    def check(what, ok, detail=""):
        nonlocal passed, failed
        if ok:
            passed += 1
            print(f"  ok    {what}")
        else:
            failed += 1
            print(f"  FAIL  {what}{': ' + detail if detail else ''}")

    def scenario(title, secrets):
        print(f"action-steps: {title}")
        temp = tempfile.mkdtemp(prefix="chataigne-action-")
        # Kept for the checks below and a look afterwards; the next run starts afresh.
        keep = os.path.join(ROOT, "target", "action-steps", title.split(":")[0])
        workspace = os.path.join(temp, "workspace")
        os.makedirs(workspace)
        server = None
        try:
            # The workflow's `with:`, its secrets filled in (an unknown secret fails the check).
            def workflow_lookup(name):
                ctx, _, key = name.partition(".")
                if ctx == "secrets" and key in secrets:
                    return secrets[key]
                raise Unknown(f"ci/github-actions.yml: the expression {name}")

            inputs = {k: str(v["default"]) if "default" in v else "" for k, v in action["inputs"].items()}
            for k, v in (step.get("with") or {}).items():
                if k not in inputs:
                    raise Unknown(f"ci/github-actions.yml passes {k}, not an input of action.yml")
                value = "true" if v is True else "false" if v is False else str(v)
                inputs[k] = substitute(value, workflow_lookup)
            inputs["suite-binary"] = suite
            names = sorted(line.split("=", 1)[0].strip() for line in inputs["env"].splitlines() if "=" in line)
            if names != sorted(secrets):
                raise Unknown(f"the workflow's env names {names}, the reference profile's personas {sorted(secrets)}")

            # The profile the workflow names, in the workspace: the reference's settings, tokens as
            # `env:` names, a free port.
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            server_log = os.path.join(temp, "reference-server.log")
            lines = [
                f"endpoint = {toml_string(base + '/mcp')}",
                f"timeout_ms = {reference.get('timeout_ms', 30000)}",
                f"server_log = {toml_string(server_log)}",
                "",
                "[tokens]",
            ]
            lines += [f"{p} = {toml_string('env:CHATAIGNE_TOKEN_' + p.upper())}" for p in tokens]
            control = reference.get("control")
            if control:
                lines += ["", "[control]", f"url = {toml_string(base + '/control')}",
                          f"secret = {toml_string(control['secret'])}"]
            profile = os.path.join(workspace, inputs["profile"])
            os.makedirs(os.path.dirname(profile), exist_ok=True)
            with open(profile, "w") as f:
                f.write("\n".join(lines) + "\n")

            # The reference server with the flags of ci/profile.reference.toml's header.
            flags = ["--listen", f"127.0.0.1:{port}", "--log-format", "json", "--log-file", server_log]
            if control:
                flags += ["--control-api", "--control-secret", control["secret"]]
            server = subprocess.Popen([mock, *flags], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"{base}/.well-known/oauth-protected-resource", timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)

            outputs, steps, summary, skipped, output = run_action(action, inputs, workspace, temp, print)
            return outputs, steps, summary, skipped, output, os.path.join(keep, "workspace", inputs["reports-dir"])
        finally:
            if server:
                server.terminate()
                server.wait(timeout=10)
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(temp, keep, symlinks=True, ignore=shutil.ignore_patterns("home"))
            shutil.rmtree(temp, ignore_errors=True)

    uses_steps = [s["name"] for s in action["runs"]["steps"] if "uses" in s]

    # 1. The workflow's own inputs: certified.
    outputs, steps, summary, skipped, output, reports = scenario("certified: the example workflow's inputs", secrets)
    check("every run step succeeded", all(s["outcome"] != "failure" for s in steps.values()),
          ", ".join(k for k, s in steps.items() if s["outcome"] == "failure"))
    check("the install step linked the built suite", steps.get("resolve", {}).get("outputs", {}).get("method") == "prebuilt")
    check("output exit-code is 0", outputs.get("exit-code") == "0", repr(outputs.get("exit-code")))
    check("output verdict is certified", outputs.get("verdict") == "certified", repr(outputs.get("verdict")))
    check("the job summary has the verdict line", "**CERTIFIED at the seed level:" in summary, summary[:300])
    check("the job summary has the Markdown clause matrix",
          "| clause | level | verdict | full level | evidence | scenarios | detail |" in summary
          and len(re.findall(r"^\| [A-Z]+-\d+ \|", summary, flags=re.M)) >= 40)
    for name in ("junit.xml", "cucumber.json", "summary.md", "report.json", "report.html"):
        check(f"reports-dir has {name}", os.path.getsize(os.path.join(reports, name)) > 0
              if os.path.exists(os.path.join(reports, name)) else False)
    if os.path.exists(os.path.join(reports, "report.json")):
        report = json.load(open(os.path.join(reports, "report.json")))
        check("report.json: certified", report.get("summary", {}).get("certified") is True)
    check("only the uses: steps were not run", sorted(s.split(" (")[0] for s in skipped) == sorted(uses_steps), str(skipped))
    check("no token in any step's output", not any(t in output for t in secret_values))
    print("  skipped: " + "; ".join(skipped))

    # 2. The owner's secret empty: the run cannot start, and the job says so.
    broken = dict(secrets, CHATAIGNE_TOKEN_OWNER="")
    outputs, steps, summary, skipped, output, reports = scenario("could-not-start: the owner's secret empty", broken)
    check("output exit-code is 2", outputs.get("exit-code") == "2", repr(outputs.get("exit-code")))
    check("output verdict is could-not-start", outputs.get("verdict") == "could-not-start", repr(outputs.get("verdict")))
    gate = list(steps.values())[-1]  # the last step gates the job
    check("the gate step fails with exit code 2", gate.get("outcome") == "failure" and gate.get("code") == 2, str(gate))
    check("the job summary says why", "could not start" in summary and "token of owner is empty" in summary, summary[:300])
    html = os.path.join(reports, "report.html")
    check("report.html says why", os.path.exists(html) and "token of owner is empty" in open(html).read())
    check("no token in any step's output", not any(t in output for t in secret_values if t))

    print(f"action-steps: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Unknown as e:
        print(f"action-steps: {e}")
        print("action-steps: 0 passed, 1 failed")
        sys.exit(1)
