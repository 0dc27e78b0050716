//! The runtime's layers hold: no module imports from a layer above its own.
//!
//! Each file of `src/` belongs to the layer of its top-level module (`src/json/…` to the JSON
//! core, …, `src/mcp/…` to MCP); `lib.rs`, `__private.rs`, `evidence.rs` and `prelude.rs` are
//! the facade, above every layer, and only re-export; `bin/` holds the commands, which use
//! the public API only. Every path that names the crate (`crate::…`, and
//! `super::…` that leaves the layer) is resolved to the layer it reaches, in `use` items and
//! in code alike (comments and string literals are passed over); one that reaches higher than
//! its own file's layer is reported with its file and line.

use std::path::{Path, PathBuf};

/// The layers, bottom to top.
const LAYERS: [&str; 8] = [
    "json",
    "vocabulary",
    "contract",
    "results",
    "binder",
    "providers",
    "dispatch",
    "mcp",
];

/// Above every layer: the crate root and the modules that only re-export.
const FACADE: usize = LAYERS.len();

/// The layer a module path (`["dispatch", "ledger"]`) belongs to; the root and the facade
/// modules are above all.
fn layer_of(module: &[String]) -> usize {
    module
        .first()
        .and_then(|top| LAYERS.iter().position(|layer| layer == top))
        .unwrap_or(FACADE)
}

/// The module path of a file under `src/`: `dispatch/dispatcher/mod.rs` is
/// `["dispatch", "dispatcher"]`, `json/scan.rs` is `["json", "scan"]`.
fn module_of(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The source with comments and string and char literals blanked out (newlines kept, so
/// lines still count).
fn code_only(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let mut at = 0;
    let blank = |text: &str, out: &mut String| {
        out.extend(text.chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
    };
    while at < bytes.len() {
        let rest = &source[at..];
        let skip = if rest.starts_with("//") {
            rest.find('\n').unwrap_or(rest.len())
        } else if rest.starts_with("/*") {
            rest.find("*/").map_or(rest.len(), |end| end + 2)
        } else if let Some(hashes) = raw_string_hashes(rest) {
            let close = format!("\"{}", "#".repeat(hashes));
            let open = 2 + hashes;
            rest[open..]
                .find(&close)
                .map_or(rest.len(), |end| open + end + close.len())
        } else if rest.starts_with('"') {
            string_end(rest)
        } else if rest.starts_with('\'') && is_char_literal(rest) {
            rest[1..].find('\'').map_or(rest.len(), |end| end + 2)
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            at += c.len_utf8();
            continue;
        };
        blank(&rest[..skip], &mut out);
        at += skip;
    }
    out
}

/// For `r"…"` or `r#"…"#` at the start of `text`: how many `#`.
fn raw_string_hashes(text: &str) -> Option<usize> {
    let after_r = text.strip_prefix('r').or_else(|| text.strip_prefix("br"))?;
    let hashes = after_r.len() - after_r.trim_start_matches('#').len();
    after_r[hashes..]
        .starts_with('"')
        .then_some(hashes + (text.len() - after_r.len()) - 1)
}

/// The length of the string literal at the start of `text` (its quotes included).
fn string_end(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut at = 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

/// Whether the `'` at the start of `text` opens a char literal (not a lifetime).
fn is_char_literal(text: &str) -> bool {
    let mut chars = text.chars().skip(1);
    matches!(
        (chars.next(), chars.next()),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}

/// Every path in `code` that starts at `crate` or `super`, with the line it is on, as the
/// module path it reaches from `module` (one per member of a `{…}` group).
fn reached_paths(code: &str, module: &[String]) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut at = 0;
    while let Some(offset) = code[at..].find(['c', 's']) {
        let start = at + offset;
        at = start + 1;
        let rest = &code[start..];
        if !(rest.starts_with("crate::") || rest.starts_with("super::")) {
            continue;
        }
        let before = start.checked_sub(1).map(|at| bytes[at]);
        if before.is_some_and(|b| b == b'$' || b == b'_' || b == b':' || b.is_ascii_alphanumeric())
        {
            continue;
        }
        let line = code[..start].matches('\n').count() + 1;
        let (segments, group) = path_at(rest);
        let mut reached: Vec<String> = if segments[0] == "crate" {
            Vec::new()
        } else {
            module.to_vec()
        };
        let mut segments = segments.into_iter().peekable();
        if segments.next_if(|segment| segment == "crate").is_none() {
            while segments.next_if(|segment| segment == "super").is_some() {
                reached.pop();
            }
        }
        reached.extend(segments);
        match group {
            None => found.push((line, reached)),
            Some(members) => found.extend(members.into_iter().map(|member| {
                let mut path = reached.clone();
                path.extend(member);
                (line, path)
            })),
        }
        at = start + 7;
    }
    found
}

/// The `::`-separated segments of the path at the start of `text`, and, when it ends in a
/// `{…}` group, the leading segments of each of the group's members.
fn path_at(text: &str) -> (Vec<String>, Option<Vec<Vec<String>>>) {
    let mut segments = Vec::new();
    let mut rest = text;
    loop {
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if end > 0 {
            segments.push(rest[..end].to_owned());
        }
        rest = &rest[end..];
        match rest.strip_prefix("::") {
            Some(after) if after.starts_with('{') => {
                return (segments, Some(group_members(&after[1..])));
            }
            Some(after) => rest = after,
            None => return (segments, None),
        }
    }
}

/// The leading path of each member of a group whose text starts after its `{`.
fn group_members(text: &str) -> Vec<Vec<String>> {
    let (mut depth, mut members, mut current) = (0, Vec::new(), String::new());
    for c in text.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                members.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    members.push(current);
    members
        .iter()
        .map(|member| member.trim())
        .filter(|member| !member.is_empty() && *member != "self")
        .map(|member| path_at(member).0)
        .collect()
}

/// Every import in `files` (path under `src/`, text) that reaches a higher layer, as
/// `file:line: the layer it is in -> the layer it reaches`.
fn upward_imports(files: &[(String, String)]) -> Vec<String> {
    let mut upward = Vec::new();
    for (file, source) in files {
        let module = module_of(file);
        let own = layer_of(&module);
        if own == FACADE {
            continue;
        }
        for (line, reached) in reached_paths(&code_only(source), &module) {
            let target = layer_of(&reached);
            if target > own {
                let name = |layer: usize| LAYERS.get(layer).copied().unwrap_or("the facade");
                upward.push(format!(
                    "src/{file}:{line}: {} imports from {} (`{}`)",
                    name(own),
                    name(target),
                    reached.join("::")
                ));
            }
        }
    }
    upward
}

fn sources(dir: &Path, root: &Path, files: &mut Vec<(String, String)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the source directory reads")
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sources(&path, root, files);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let relative = path.strip_prefix(root).expect("under src/");
            let name = relative.to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(&path).expect("a source file reads");
            files.push((name, text));
        }
    }
}

#[test]
fn no_module_imports_from_a_layer_above_its_own() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    assert!(files.len() > 40, "the sources were found: {}", files.len());
    let upward = upward_imports(&files);
    assert!(
        upward.is_empty(),
        "imports that run upward:\n{}",
        upward.join("\n")
    );
}

#[test]
fn every_top_level_module_is_a_layer_or_the_facade() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut tops: Vec<String> = std::fs::read_dir(&root)
        .expect("src/ reads")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .map(|name| name.trim_end_matches(".rs").to_owned())
        .collect();
    tops.sort();
    for top in &tops {
        assert!(
            LAYERS.contains(&top.as_str())
                || ["lib", "__private", "evidence", "prelude"].contains(&top.as_str())
                // The binaries reach the library through its public API, never `crate::`.
                || top == "bin",
            "src/{top} is in no layer: add it to LAYERS or the facade"
        );
    }
}

fn file(name: &str, text: &str) -> (String, String) {
    (name.to_owned(), text.to_owned())
}

#[test]
fn an_upward_use_is_reported_with_its_file_and_line() {
    let files = [file(
        "json/scan.rs",
        "//! The scanner.\n\nuse crate::dispatch::Dispatcher;\n",
    )];
    assert_eq!(
        upward_imports(&files),
        ["src/json/scan.rs:3: json imports from dispatch (`dispatch::Dispatcher`)"]
    );
}

#[test]
fn a_path_in_code_a_group_and_a_root_name_are_reported_too() {
    let files = [file(
        "contract/spec.rs",
        "use crate::{json::format, binder::Binder};\nfn f() { crate::results::ModelResult::x(); }\nuse crate::ToolSpec;\n",
    )];
    let found = upward_imports(&files);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].starts_with("src/contract/spec.rs:1: contract imports from binder"));
    assert!(found[1].starts_with("src/contract/spec.rs:2: contract imports from results"));
    assert!(found[2].starts_with("src/contract/spec.rs:3: contract imports from the facade"));
}

#[test]
fn downward_and_sideways_paths_comments_and_strings_pass() {
    let files = [file(
        "dispatch/dispatcher/write.rs",
        "use super::Ended;\nuse crate::dispatch::ledger::Record;\nuse crate::json::canonical;\n\
         /// See [`crate::mcp`].\nconst A: &str = \"crate::mcp::x\";\n// crate::mcp\n",
    )];
    assert_eq!(upward_imports(&files), Vec::<String>::new());
}

#[test]
fn super_from_a_layer_top_reaches_the_facade() {
    let files = [
        file("json/mod.rs", "use super::Binder;\n"),
        file("providers/openai.rs", "use super::ProviderError;\n"),
    ];
    assert_eq!(
        upward_imports(&files),
        ["src/json/mod.rs:1: json imports from the facade (`Binder`)"]
    );
}
