#!/usr/bin/env node
// Launches RepoOS Agent's MCP server (Python) over stdio. The protocol runs between the
// client and the Python process: this launcher passes stdin, stdout and stderr through
// untouched, forwards signals, and exits with the server's exit code.
"use strict";

const { spawn, spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const VENV_PYTHON = process.platform === "win32" ? path.join(".venv", "Scripts", "python.exe") : path.join(".venv", "bin", "python");

// Whether `python` can import the server: a user's own project `.venv` usually cannot.
function hasRepoos(python) {
  return spawnSync(python, ["-c", "import repoos_agent"], { stdio: "ignore" }).status === 0;
}

// The nearest `.venv` at or above `start` that has RepoOS Agent installed: the project's virtual environment.
function venvPythonAbove(start) {
  let directory = path.resolve(start);
  for (;;) {
    const candidate = path.join(directory, VENV_PYTHON);
    if (fs.existsSync(candidate) && hasRepoos(candidate)) return candidate;
    const parent = path.dirname(directory);
    if (parent === directory) return null;
    directory = parent;
  }
}

// REPOOS_PYTHON, else the project's .venv with repoos_agent in it (above this package, then
// above the working directory, where an assistant is started in the project), else python3 on the PATH.
function chooseInterpreter() {
  if (process.env.REPOOS_PYTHON) return process.env.REPOOS_PYTHON;
  return venvPythonAbove(path.join(__dirname, "..")) || venvPythonAbove(process.cwd()) || "python3";
}

const python = chooseInterpreter();
const server = spawn(python, ["-m", "repoos_agent.mcp", ...process.argv.slice(2)], { stdio: "inherit" });

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => server.kill(signal));
}

server.on("error", (error) => {
  process.stderr.write(
    `repoos-mcp: cannot start ${python}: ${error.message}; set REPOOS_PYTHON to a Python that has repoos-agent installed\n`,
  );
  process.exit(127);
});

server.on("exit", (code, signal) => {
  process.exit(signal ? 128 + (os.constants.signals[signal] || 0) : code);
});
