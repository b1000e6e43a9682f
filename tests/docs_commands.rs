//! Every command in README.md and docs/*.md runs, and every relative link in them (and in
//! ARCHITECTURE.md) points at a file that exists, so the docs cannot drift from the code.
//!
//! The convention (ARCHITECTURE.md, "The docs", says the same):
//! - a ```` ```sh ```` block is run; ```` ```sh no-run REASON ```` is shown, not run, and must say
//!   why (a GPU, a long run, cargo itself); `bash`, `shell`, `console` and `zsh` fences are
//!   refused, so no command escapes the check; every other fence (text, csv, json, toml) is shown;
//! - the blocks of one file run in order, each as one `bash -Eeuo pipefail` script, in one fresh
//!   work folder per file (a block reads what the blocks before it wrote), with `schedlab` on
//!   the PATH (this build's binary), `../shared/traces` beside the work folder when the checkout
//!   has it, and copies of the checkout's `regress/` and `traces/tests/data/slurm/` (real Slurm
//!   dumps);
//! - without the shared traces, a file's blocks from the first that names `../shared/traces`
//!   on are skipped, each with a SKIPPED line;
//! - what a block starts in the background (`&`) is stopped (SIGTERM to the block's process
//!   group) when the block ends.

mod common;

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The files whose commands are run.
fn command_files() -> Vec<PathBuf> {
    let root = checkout();
    let mut files = vec![root.join("README.md")];
    files.extend(markdown_in(&root.join("docs")));
    files
}

/// The files whose relative links are checked.
fn link_files() -> Vec<PathBuf> {
    let mut files = command_files();
    files.push(checkout().join("ARCHITECTURE.md"));
    files
}

/// A block that runs longer than this has hung (a wait that never ends): it fails.
const BLOCK_TIMEOUT: Duration = Duration::from_secs(180);

/// Folders of the checkout that documented commands read, copied into each work folder.
const CHECKOUT_INPUTS: &[&str] = &["regress", "traces/tests/data/slurm"];

/// What the ERR trap prints before a failing command ends the block: its line in the script.
const FAILED_AT: &str = "DOCS_COMMANDS_FAILED_AT ";

#[derive(Debug, PartialEq)]
enum Kind {
    Run,
    NoRun,
    Show,
}

#[derive(Debug)]
struct Block {
    /// Line of the opening fence in its file (1-based).
    fence_line: usize,
    kind: Kind,
    body: String,
}

fn checkout() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn markdown_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|path| path.extension().is_some_and(|ext| ext == "md"));
    files.sort();
    files
}

/// The fenced blocks of a Markdown text, or what breaks the convention, with its line.
fn blocks(text: &str) -> Result<Vec<Block>, String> {
    let mut found = Vec::new();
    let mut open: Option<(usize, Kind, Vec<&str>)> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        match open.take() {
            None => {
                if let Some(info) = line.strip_prefix("```") {
                    open = Some((number, kind(info.trim()).map_err(|e| format!("line {number}: {e}"))?, Vec::new()));
                }
            }
            Some((fence_line, kind, mut lines)) => {
                if line.trim_end() == "```" {
                    found.push(Block { fence_line, kind, body: lines.join("\n") });
                } else {
                    lines.push(line);
                    open = Some((fence_line, kind, lines));
                }
            }
        }
    }
    match open {
        Some((fence_line, ..)) => Err(format!("line {fence_line}: a code block that is never closed")),
        None => Ok(found),
    }
}

fn kind(info: &str) -> Result<Kind, String> {
    let mut words = info.split_whitespace();
    match (words.next(), words.next()) {
        (Some("sh"), None) => Ok(Kind::Run),
        (Some("sh"), Some("no-run")) if words.next().is_some() => Ok(Kind::NoRun),
        (Some("sh"), Some("no-run")) => Err("```sh no-run must say why the block is not run".into()),
        (Some("sh"), Some(other)) => Err(format!("```sh takes only `no-run REASON`, not `{other}`")),
        (Some(shell @ ("bash" | "shell" | "console" | "zsh")), _) => {
            Err(format!("```{shell}: use ```sh (run by this test) or ```sh no-run REASON"))
        }
        _ => Ok(Kind::Show),
    }
}

/// A fresh folder for one file's blocks: `work/` (where they run), `shared` (a link to the
/// checkout's ../shared, when it exists), `bin/schedlab` and `logs/`.
fn workspace(file: &Path) -> PathBuf {
    let name = file.strip_prefix(checkout()).unwrap_or(file).display().to_string().replace('/', "_");
    let root = fresh_root(&name);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_schedlab"), root.join("bin/schedlab")).expect("link binary");
    let shared = checkout().join("../shared");
    if shared.join("traces").is_dir() {
        std::os::unix::fs::symlink(shared.canonicalize().expect("shared path"), root.join("shared"))
            .expect("link shared");
    }
    for input in CHECKOUT_INPUTS {
        copy_dir(&checkout().join(input), &root.join("work").join(input));
    }
    root
}

/// An empty `work/`, `bin/` and `logs/` under a fresh folder of the target dir.
fn fresh_root(name: &str) -> PathBuf {
    let root = common::scratch("docs_commands", name);
    for dir in ["work", "bin", "logs"] {
        std::fs::create_dir_all(root.join(dir)).expect("create folder");
    }
    root
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create folder");
    for entry in std::fs::read_dir(from).expect("read folder").map(|e| e.expect("folder entry")) {
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy file");
        }
    }
}

/// How a block ended.
struct Ran {
    status: Option<ExitStatus>,
    stdout: String,
    stderr: String,
}

/// Runs one block as a script in `root/work`, in a process group of its own, and stops what it
/// left in the background once it ends.
fn run_block(root: &Path, index: usize, body: &str) -> Ran {
    let trap = format!("trap 'echo \"{FAILED_AT}$LINENO\" >&2' ERR");
    // One line of prelude, so that line k of the body is line k + 1 of the script.
    let script = format!("set -Eeuo pipefail; {trap}\n{body}\n");
    let (out_path, err_path) = (root.join(format!("logs/{index}.out")), root.join(format!("logs/{index}.err")));
    let path = format!("{}:{}", root.join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(root.join("work"))
        .env("PATH", path)
        .env("CI", "1")
        .env_remove("SCHEDLAB_TOKEN")
        .stdin(Stdio::null())
        // Files, not pipes: a background process would hold a pipe open past the block's end.
        .stdout(File::create(&out_path).expect("log file"))
        .stderr(File::create(&err_path).expect("log file"))
        .process_group(0)
        .spawn()
        .expect("bash runs");
    let deadline = Instant::now() + BLOCK_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for bash") {
            break Some(status);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    stop_group(child.id());
    let _ = child.wait();
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    Ran { status, stdout: read(&out_path), stderr: read(&err_path) }
}

/// SIGTERM to the block's process group (its background processes stop cleanly: a coordinator
/// writes its journal), SIGKILL to what is left after 10 s.
fn stop_group(pgid: u32) {
    let group = format!("-{pgid}");
    let signal = |args: &[&str]| {
        Command::new("kill").args(args).arg("--").arg(&group).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
    };
    if !signal(&["-TERM"]) {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while signal(&["-0"]) {
        if Instant::now() > deadline {
            signal(&["-KILL"]);
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The failure of a block in words: file, line, the command, and the end of what it printed.
fn failure(file: &str, text: &str, block: &Block, ran: &Ran) -> Option<String> {
    let why = match ran.status {
        Some(status) if status.success() => return None,
        Some(status) => format!("exited with {status}"),
        None => format!("still running after {} s", BLOCK_TIMEOUT.as_secs()),
    };
    // The last script line the ERR trap reported; else the block's first line.
    let script_line =
        ran.stderr.lines().filter_map(|l| l.strip_prefix(FAILED_AT)?.trim().parse::<usize>().ok()).next_back();
    let line = block.fence_line + script_line.unwrap_or(2).saturating_sub(1).max(1);
    let command = text.lines().nth(line - 1).unwrap_or("").trim();
    let tail = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with(FAILED_AT))
            .rev()
            .take(15)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    };
    Some(format!(
        "{file}:{line}: `{command}` {why}\n--- stdout (last lines)\n{}\n--- stderr (last lines)\n{}",
        tail(&ran.stdout),
        tail(&ran.stderr)
    ))
}

/// Runs every block of one file in order; the failures, in words.
fn check_file(path: &Path) -> Vec<String> {
    let file = path.strip_prefix(checkout()).unwrap_or(path).display().to_string();
    let text = std::fs::read_to_string(path).expect("read doc");
    let blocks = match blocks(&text) {
        Ok(blocks) => blocks,
        Err(e) => return vec![format!("{file}: {e}")],
    };
    let runnable: Vec<&Block> = blocks.iter().filter(|b| b.kind == Kind::Run).collect();
    if runnable.is_empty() {
        return Vec::new();
    }
    let root = workspace(path);
    let has_shared = root.join("shared").exists();
    let mut skipping = false;
    let mut failures = Vec::new();
    for (index, block) in runnable.into_iter().enumerate() {
        skipping |= !has_shared && block.body.contains("../shared/traces");
        if skipping {
            eprintln!("SKIPPED: {file}:{}: needs ../shared/traces (or follows a block that does)", block.fence_line);
            continue;
        }
        let started = Instant::now();
        let ran = run_block(&root, index, &block.body);
        eprintln!("{file}:{}: {:.1} s", block.fence_line, started.elapsed().as_secs_f64());
        if let Some(failure) = failure(&file, &text, block, &ran) {
            failures.push(failure);
            break; // the blocks after it may read what it did not write
        }
    }
    failures
}

#[test]
fn every_documented_command_runs() {
    let started = Instant::now();
    let failures: Vec<String> = command_files().iter().flat_map(|file| check_file(file)).collect();
    eprintln!("all documented commands: {:.1} s", started.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "documented commands failed:\n\n{}", failures.join("\n\n"));
}

/// The relative link targets of a Markdown text outside its code blocks, with their lines.
fn relative_links(text: &str) -> Vec<(usize, String)> {
    let mut links = Vec::new();
    let mut in_code = false;
    for (index, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        for (start, _) in line.match_indices("](") {
            let rest = &line[start + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap_or("");
            let external = ["http://", "https://", "mailto:"].iter().any(|p| target.starts_with(p));
            if !target.is_empty() && !external {
                links.push((index + 1, target.to_string()));
            }
        }
    }
    links
}

#[test]
fn every_relative_link_points_at_a_file() {
    let mut broken = Vec::new();
    for path in link_files() {
        let text = std::fs::read_to_string(&path).expect("read doc");
        for (line, target) in relative_links(&text) {
            if !path.parent().expect("file in a folder").join(&target).exists() {
                broken.push(format!("{}:{line}: {target}", path.strip_prefix(checkout()).unwrap_or(&path).display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to files that do not exist:\n{}", broken.join("\n"));
}

#[test]
fn the_convention_reads_fences_as_documented() {
    let text = "intro\n```sh\nschedlab simulate\n```\n```sh no-run needs a GPU\nx\n```\n```text\nout\n```\n";
    let found = blocks(text).expect("valid");
    let kinds: Vec<(usize, &Kind, &str)> = found.iter().map(|b| (b.fence_line, &b.kind, b.body.as_str())).collect();
    assert_eq!(kinds, [(2, &Kind::Run, "schedlab simulate"), (5, &Kind::NoRun, "x"), (8, &Kind::Show, "out")]);
    assert_eq!(blocks("```sh no-run\nx\n```\n").unwrap_err(), "line 1: ```sh no-run must say why the block is not run");
    assert!(blocks("a\n```console\n$ x\n```\n").unwrap_err().starts_with("line 2: ```console: use ```sh"));
    assert_eq!(blocks("```sh\nx\n").unwrap_err(), "line 1: a code block that is never closed");
}

#[test]
fn a_failing_command_is_named_by_file_and_line() {
    let text = "# doc\n\n```sh\ntrue\nfalse\necho never\n```\n";
    let block = blocks(text).expect("valid").remove(0);
    let root = fresh_root("self-test");
    let ran = run_block(&root, 0, &block.body);
    let message = failure("doc.md", text, &block, &ran).expect("the block fails");
    assert!(message.starts_with("doc.md:5: `false` exited with exit status: 1"), "{message}");
    assert!(!ran.stdout.contains("never"));
}

#[test]
fn links_are_read_outside_code_blocks_without_anchors() {
    let text = "[a](docs/x.md#top) [b](https://e.org) [c](#here)\n```\n[d](nope.md)\n```\n[e](../y.md)\n";
    assert_eq!(relative_links(text), [(1, "docs/x.md".to_string()), (5, "../y.md".to_string())]);
}
