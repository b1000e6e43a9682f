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
//!   group) when the block ends;
//! - a ```` ```text expected ```` block is what the last `sh` block before it printed on stdout
//!   (```` ```text expected stderr ````: on stderr), checked line by line: the text around the
//!   numbers must be the same (a run of whitespace counts as one space), and each number the
//!   same digits, or within the fence's `tolerance=2%` (of the page's value) or `tolerance=0.5`
//!   (absolute); a line `...` skips printed lines up to the first place where the lines after it
//!   (up to the next `...`) all have their text, and, last, the rest of the output, as for wall
//!   times; a disagreement names the page's line and both values. Prose may stand between the
//!   command and its expected block;
//! - `DOCS_COMMANDS_FILE=slurm` runs only the pages whose path contains `slurm`.

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
    /// ```` ```text expected ```` : what the `sh` block before it prints.
    Expected(Expected),
}

/// How a ```` ```text expected ```` block is compared with what its command printed.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Expected {
    /// `stderr`: the block checks what the command wrote on stderr, not stdout.
    stderr: bool,
    tolerance: Tolerance,
}

/// How far a printed number may be from the page's.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tolerance {
    /// The same digits (the default).
    Exact,
    /// `tolerance=2%`: within 2 % of the page's value.
    Relative(f64),
    /// `tolerance=0.5`: within 0.5 of the page's value.
    Absolute(f64),
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
                    let kind = kind(info.trim()).map_err(|e| format!("line {number}: {e}"))?;
                    // The output an expected block checks is that of the last command block
                    // before it (other expected blocks of the same command may come between).
                    let checks = found.iter().rev().find(|b: &&Block| !matches!(b.kind, Kind::Expected(_)));
                    if matches!(kind, Kind::Expected(_)) && !checks.is_some_and(|b| b.kind == Kind::Run) {
                        return Err(format!(
                            "line {number}: ```text expected must follow a ```sh block (what it prints)"
                        ));
                    }
                    open = Some((number, kind, Vec::new()));
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
        (Some("text"), Some("expected")) => expected(words),
        (Some("text"), Some(other)) => Err(format!("```text takes only `expected`, not `{other}`")),
        (Some(shell @ ("bash" | "shell" | "console" | "zsh")), _) => {
            Err(format!("```{shell}: use ```sh (run by this test) or ```sh no-run REASON"))
        }
        _ => Ok(Kind::Show),
    }
}

/// The options of a ```` ```text expected ```` fence: `stderr`, `tolerance=N%` or `tolerance=N`.
fn expected<'a>(words: impl Iterator<Item = &'a str>) -> Result<Kind, String> {
    let mut found = Expected { stderr: false, tolerance: Tolerance::Exact };
    for word in words {
        let bad = || format!("```text expected takes `stderr`, `tolerance=N%` or `tolerance=N`, not `{word}`");
        match word.strip_prefix("tolerance=") {
            None if word == "stderr" => found.stderr = true,
            None => return Err(bad()),
            Some(value) => {
                let (number, relative) = value.strip_suffix('%').map_or((value, false), |n| (n, true));
                let number: f64 = number.parse().ok().filter(|n: &f64| n.is_finite() && *n >= 0.0).ok_or_else(bad)?;
                found.tolerance = if relative { Tolerance::Relative(number) } else { Tolerance::Absolute(number) };
            }
        }
    }
    Ok(Kind::Expected(found))
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

/// A line of output read for comparison: its text, and the numbers in it.
#[derive(Debug, PartialEq)]
enum Token {
    Text(String),
    Number(String),
}

/// The tokens of a line, its runs of whitespace read as one space. A number is a decimal (a
/// sign, digits, a fraction, an exponent: `-6.723e-5`) standing on its own: not inside a word
/// (`p50`, `4x8`, a digest such as `d020b80e`) and not glued to a letter after it.
fn tokens(line: &str) -> Vec<Token> {
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    let bytes = line.as_bytes();
    let word = |i: usize| bytes.get(i).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
    let digits = |mut i: usize| {
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    let mut found = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    while i < bytes.len() {
        let after_word = i > 0 && (word(i - 1) || bytes[i - 1] == b'.');
        let sign = matches!(bytes[i], b'+' | b'-') && bytes.get(i + 1).is_some_and(u8::is_ascii_digit);
        let mut end =
            if after_word || !(sign || bytes[i].is_ascii_digit()) { i } else { digits(i + usize::from(sign)) };
        if end > i && bytes.get(end) == Some(&b'.') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit) {
            end = digits(end + 1);
        }
        if end > i && matches!(bytes.get(end), Some(b'e' | b'E')) {
            let exponent = end + 1 + usize::from(matches!(bytes.get(end + 1), Some(b'+' | b'-')));
            if bytes.get(exponent).is_some_and(u8::is_ascii_digit) {
                end = digits(exponent);
            }
        }
        if end > i && !word(end) {
            if !text.is_empty() {
                found.push(Token::Text(std::mem::take(&mut text)));
            }
            found.push(Token::Number(line[i..end].to_string()));
            i = end;
        } else {
            let c = line[i..].chars().next().expect("a char at a char boundary");
            text.push(c);
            i += c.len_utf8();
        }
    }
    if !text.is_empty() {
        found.push(Token::Text(text));
    }
    found
}

/// Whether two lines are the same text around their numbers (whatever the numbers are).
fn same_shape(a: &[Token], b: &[Token]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|pair| match pair {
            (Token::Text(x), Token::Text(y)) => x == y,
            (Token::Number(_), Token::Number(_)) => true,
            _ => false,
        })
}

/// Whether a printed number agrees with the page's.
fn agrees(page: &str, printed: &str, tolerance: Tolerance) -> bool {
    let (Ok(want), Ok(got)) = (page.parse::<f64>(), printed.parse::<f64>()) else { return page == printed };
    match tolerance {
        Tolerance::Exact => page == printed,
        Tolerance::Relative(percent) => (got - want).abs() <= percent / 100.0 * want.abs(),
        Tolerance::Absolute(by) => (got - want).abs() <= by,
    }
}

/// A line of an expected block: its line in the page, its text, its tokens.
type ExpectedLine<'a> = (usize, &'a str, Vec<Token>);

/// Where an expected block (its lines from `first_line` of the page) and what its command
/// printed disagree: each disagreement with its line in the page.
///
/// Line by line, in order: the text around the numbers must be the same (runs of whitespace
/// count as one space), the numbers the same or within the tolerance. A line `...` skips
/// printed lines up to the first place where the lines after it, up to the next `...`, all have
/// their expected text; without a `...` last, the output must end where the block does. A
/// number that differs is reported and the comparison goes on; a line that differs in its text
/// (or that no printed line matches) ends it.
fn compare_output(expected: &str, first_line: usize, tolerance: Tolerance, printed: &str) -> Vec<(usize, String)> {
    let mut printed: Vec<&str> = printed.lines().collect();
    while printed.last().is_some_and(|l| l.trim().is_empty()) {
        printed.pop();
    }
    let printed: Vec<(&str, Vec<Token>)> = printed.into_iter().map(|l| (l, tokens(l))).collect();
    // The runs of expected lines between `...` lines: (after a `...`, its lines).
    let mut groups: Vec<(bool, Vec<ExpectedLine>)> = vec![(false, Vec::new())];
    for (index, want) in expected.lines().enumerate() {
        if want.trim() == "..." {
            groups.push((true, Vec::new()));
        } else {
            groups.last_mut().expect("a group").1.push((first_line + index, want, tokens(want)));
        }
    }
    let open_end = groups.last().is_some_and(|(skip, lines)| *skip && lines.is_empty());
    groups.retain(|(skip, lines)| !lines.is_empty() || !skip);
    let end_line = first_line + expected.lines().count();
    let quote = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut problems = Vec::new();
    let mut next = 0;
    let last = groups.len().saturating_sub(1);
    for (index, (skip, lines)) in groups.iter().enumerate() {
        let anchored = index == last && !open_end;
        let fits = |at: usize| {
            at + lines.len() <= printed.len()
                && (!anchored || at + lines.len() == printed.len())
                && lines.iter().zip(&printed[at..]).all(|(want, got)| same_shape(&want.2, &got.1))
        };
        let first_like = |from: usize| (from..printed.len()).find(|&at| same_shape(&lines[0].2, &printed[at].1));
        let at = if *skip { (next..=printed.len()).find(|&at| fits(at)) } else { Some(next).filter(|&at| fits(at)) };
        // Where no place fits, the lines are compared where the first of them matches, to
        // name the first that does not.
        let Some(at) = at.or_else(|| if *skip { first_like(next) } else { Some(next) }) else {
            let after = if next == 0 { "in the output".to_string() } else { format!("after output line {next}") };
            problems.push((lines[0].0, format!("expected `{}`: no line like it {after}", quote(lines[0].1))));
            return problems;
        };
        for (k, (line, want, want_tokens)) in lines.iter().enumerate() {
            let Some((got, got_tokens)) = printed.get(at + k) else {
                let after =
                    if at + k == 0 { "with no output".to_string() } else { format!("after output line {}", at + k) };
                problems.push((*line, format!("expected `{}`: the output ended {after}", quote(want))));
                return problems;
            };
            if !same_shape(want_tokens, got_tokens) {
                let message =
                    format!("expected `{}`, printed `{}` (output line {})", quote(want), quote(got), at + k + 1);
                problems.push((*line, message));
                return problems;
            }
            for pair in want_tokens.iter().zip(got_tokens) {
                if let (Token::Number(page), Token::Number(number)) = pair
                    && !agrees(page, number, tolerance)
                {
                    let message =
                        format!("expected {page}, printed {number} (output line {}: `{}`)", at + k + 1, quote(got));
                    problems.push((*line, message));
                }
            }
        }
        next = at + lines.len();
    }
    if !open_end && next < printed.len() {
        let extra = quote(printed[next].0);
        let message = format!(
            "printed more than the block shows: `{extra}` (output line {}); end the block with `...` to skip the rest",
            next + 1
        );
        problems.push((end_line, message));
    }
    problems
}

/// Runs every block of one file in order; the failures, in words.
fn check_file(path: &Path) -> Vec<String> {
    let file = path.strip_prefix(checkout()).unwrap_or(path).display().to_string();
    let text = std::fs::read_to_string(path).expect("read doc");
    let blocks = match blocks(&text) {
        Ok(blocks) => blocks,
        Err(e) => return vec![format!("{file}: {e}")],
    };
    if !blocks.iter().any(|b| b.kind == Kind::Run) {
        return Vec::new();
    }
    let root = workspace(path);
    let has_shared = root.join("shared").exists();
    let mut skipping = false;
    let mut failures = Vec::new();
    // What the last command block printed (`None`: skipped), for the expected blocks after it.
    let mut last: Option<(usize, Ran)> = None;
    for (index, block) in blocks.iter().enumerate() {
        match block.kind {
            Kind::Run => {}
            Kind::Expected(expected) => {
                if let Some((command_line, ran)) = &last {
                    let printed = if expected.stderr { &ran.stderr } else { &ran.stdout };
                    let printed: String =
                        printed.lines().filter(|l| !l.starts_with(FAILED_AT)).collect::<Vec<_>>().join("\n");
                    for (line, what) in compare_output(&block.body, block.fence_line + 1, expected.tolerance, &printed)
                    {
                        failures.push(format!("{file}:{line}: {what}; the command: the block at line {command_line}"));
                    }
                }
                continue;
            }
            Kind::NoRun | Kind::Show => continue,
        }
        skipping |= !has_shared && block.body.contains("../shared/traces");
        if skipping {
            eprintln!("SKIPPED: {file}:{}: needs ../shared/traces (or follows a block that does)", block.fence_line);
            last = None;
            continue;
        }
        let started = Instant::now();
        let ran = run_block(&root, index, &block.body);
        eprintln!("{file}:{}: {:.1} s", block.fence_line, started.elapsed().as_secs_f64());
        if let Some(failure) = failure(&file, &text, block, &ran) {
            failures.push(failure);
            break; // the blocks after it may read what it did not write
        }
        last = Some((block.fence_line, ran));
    }
    failures
}

#[test]
fn every_documented_command_runs() {
    let started = Instant::now();
    let only = std::env::var("DOCS_COMMANDS_FILE").unwrap_or_default();
    let files = command_files().into_iter().filter(|f| f.display().to_string().contains(&only));
    let failures: Vec<String> = files.flat_map(|file| check_file(&file)).collect();
    eprintln!("all documented commands: {:.1} s", started.elapsed().as_secs_f64());
    assert!(
        failures.is_empty(),
        "documented commands failed or printed what their pages do not say:\n\n{}",
        failures.join("\n\n")
    );
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

#[test]
fn expected_blocks_are_read_with_their_options() {
    let text = "```sh\nx\n```\n```text expected\na\n```\n```text expected stderr tolerance=2%\nb\n```\n";
    let kinds: Vec<Kind> = blocks(text).expect("valid").into_iter().map(|b| b.kind).collect();
    let exact = Expected { stderr: false, tolerance: Tolerance::Exact };
    let relative = Expected { stderr: true, tolerance: Tolerance::Relative(2.0) };
    assert_eq!(kinds, [Kind::Run, Kind::Expected(exact), Kind::Expected(relative)]);
    let absolute = blocks("```sh\nx\n```\n```text expected tolerance=0.5\n```\n").expect("valid").remove(1).kind;
    assert_eq!(absolute, Kind::Expected(Expected { stderr: false, tolerance: Tolerance::Absolute(0.5) }));
    let error = |text: &str| blocks(text).unwrap_err();
    assert_eq!(
        error("```sh\nx\n```\n```text expected loud\n```\n"),
        "line 4: ```text expected takes `stderr`, `tolerance=N%` or `tolerance=N`, not `loud`"
    );
    assert!(error("```sh\nx\n```\n```text expected tolerance=x%\n```\n").ends_with("not `tolerance=x%`"));
    assert_eq!(error("```sh\nx\n```\n```text expect\n```\n"), "line 4: ```text takes only `expected`, not `expect`");
    let orphan = "line 2: ```text expected must follow a ```sh block (what it prints)";
    assert_eq!(error("a\n```text expected\n```\n"), orphan);
    assert_eq!(
        error("```sh no-run a GPU\nx\n```\n```text expected\n```\n"),
        "line 4: ```text expected must follow a ```sh block (what it prints)"
    );
    assert_eq!(
        error("```toml\nx\n```\n```text expected\n```\n"),
        "line 4: ```text expected must follow a ```sh block (what it prints)"
    );
}

#[test]
fn numbers_are_read_only_where_they_stand_alone() {
    let numbers = |line: &str| -> Vec<String> {
        tokens(line).into_iter().filter_map(|t| if let Token::Number(n) = t { Some(n) } else { None }).collect()
    };
    assert_eq!(
        numbers("JCT mean / p50   90.7 s / 2.7 min; (+43 %) -6.723e-5 0.00e0"),
        ["90.7", "2.7", "+43", "-6.723e-5", "0.00e0"]
    );
    assert!(numbers("digest d020b80ee77c87a7 4x8:V100 p95 run-1a").is_empty());
    assert_eq!(numbers("1796156590,node_fail,1,,2"), ["1796156590", "1", "2"]);
    assert_eq!(tokens("a   b\t 7"), [Token::Text("a b ".into()), Token::Number("7".into())]);
}

/// The page's lines 10.. (`| fifo | 76.1 s |` is line 11), against what a command printed.
fn problems(expected: &str, tolerance: Tolerance, printed: &str) -> Vec<String> {
    compare_output(expected, 10, tolerance, printed).into_iter().map(|(line, what)| format!("{line}: {what}")).collect()
}

#[test]
fn an_expected_block_passes_on_the_same_figures_and_fails_on_a_changed_one() {
    let page = "policy  mean wait\nfifo    76.1 s\nsjf     27.4 s";
    let printed = "policy mean wait\nfifo 76.1 s\nsjf  27.4 s\n\n";
    assert!(problems(page, Tolerance::Exact, printed).is_empty(), "the same figures, other spacing");
    let changed = "policy mean wait\nfifo 86.3 s\nsjf 29.1 s\n";
    assert_eq!(
        problems(page, Tolerance::Exact, changed),
        [
            "11: expected 76.1, printed 86.3 (output line 2: `fifo 86.3 s`)",
            "12: expected 27.4, printed 29.1 (output line 3: `sjf 29.1 s`)",
        ]
    );
    // Exact means the same digits: 76.10 is not 76.1.
    assert_eq!(problems("76.1", Tolerance::Exact, "76.10").len(), 1);
    // Text that differs ends the comparison at that line; so does a missing or an extra line.
    assert_eq!(
        problems(page, Tolerance::Exact, "policy mean wait\nlifo 76.1 s\n"),
        ["11: expected `fifo 76.1 s`, printed `lifo 76.1 s` (output line 2)"]
    );
    assert_eq!(
        problems(page, Tolerance::Exact, "policy mean wait\n"),
        ["11: expected `fifo 76.1 s`: the output ended after output line 1"]
    );
    assert_eq!(
        problems("a 1", Tolerance::Exact, "a 1\nb 2"),
        ["11: printed more than the block shows: `b 2` (output line 2); end the block with `...` to skip the rest"]
    );
}

#[test]
fn a_tolerance_lets_numbers_move_that_far_and_no_further() {
    let relative = Tolerance::Relative(2.0);
    assert!(problems("wait 100.0 s", relative, "wait 102 s").is_empty());
    assert!(problems("wait 100.0 s", relative, "wait 98.0 s").is_empty());
    assert_eq!(
        problems("wait 100.0 s", relative, "wait 102.5 s"),
        ["10: expected 100.0, printed 102.5 (output line 1: `wait 102.5 s`)"]
    );
    let absolute = Tolerance::Absolute(0.5);
    assert!(problems("p50 -3 s", absolute, "p50 -2.5 s").is_empty());
    assert_eq!(problems("p50 -3 s", absolute, "p50 -2.4 s").len(), 1);
    // The tolerance is for numbers; the text around them is still compared exactly.
    assert_eq!(problems("wait 100 s", relative, "wait 100 min").len(), 1);
}

#[test]
fn dots_skip_printed_lines_up_to_the_next_expected_one() {
    let printed = "policy fifo\nwall time 0.003 s\nqueueing delay mean 86.3 s\nevents 665\nwrote run-fifo\n";
    assert!(problems("policy fifo\n...\nqueueing delay mean 86.3 s\n...", Tolerance::Exact, printed).is_empty());
    assert!(problems("...\nevents 665\nwrote run-fifo", Tolerance::Exact, printed).is_empty());
    // A skip ends at the first line with the expected line's text, whose figures then count.
    assert_eq!(
        problems("...\nqueueing delay mean 76.1 s\n...", Tolerance::Exact, printed),
        ["11: expected 76.1, printed 86.3 (output line 3: `queueing delay mean 86.3 s`)"]
    );
    assert_eq!(
        problems("policy fifo\n...\nmakespan 5.7 min\n...", Tolerance::Exact, printed),
        ["12: expected `makespan 5.7 min`: no line like it after output line 1"]
    );
    // A skip ends where all the lines up to the next `...` fit, not only the first of them.
    let two_tables = "run metric\n--- ---\nnew run\nrun metric\n---- ------\ndigest 25d5\ndone 1 run\n";
    let page = "...\nrun metric\n---- ------\ndigest 25d5\n...\ndone 2 run";
    assert_eq!(
        problems(page, Tolerance::Exact, two_tables),
        ["15: expected 2, printed 1 (output line 7: `done 1 run`)"]
    );
    // Without `...` last, the lines after the block's last are an error.
    assert_eq!(problems("...\nevents 665", Tolerance::Exact, printed).len(), 1);
}
