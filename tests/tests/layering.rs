//! The layers of both crates hold: no module imports from a layer above its own, and no
//! files import each other in a circle.
//!
//! In the runtime, each file of `src/` belongs to the layer of its top-level module
//! (`src/json/…` to the JSON core, …, `src/console/…` to the console); `lib.rs`,
//! `__private.rs`, `evidence.rs` and `prelude.rs` are the facade, above every layer, and only
//! re-export; `bin/` holds the commands, which use the public API only. In the derive, each
//! file belongs to its phase: the vocabulary the phases share, parse, check, expand (`lib.rs`
//! is the facade). Every path that names the crate (`crate::…`, `super::…`, `self::…` and a
//! child module's name) is resolved to the layer it reaches, in `use` items and in code alike
//! (comments and string literals are passed over); one that reaches higher than its own
//! file's layer is reported with its file and line.
//!
//! A file depends on the file that defines each name it uses, and on every file whose
//! `pub use` re-export the path goes through on its way (`crate::control::RowSeal` reaches
//! `control/mod.rs` and `control/seal.rs`): naming a module's re-export is using that module.
//! A re-export is not a dependency of the file that makes it, so a `mod.rs` that names its
//! children's items for its readers is no circle; a `mod.rs` whose own code uses a child that
//! uses it back (directly or through its re-exports) is one. Unit-test modules are passed over.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The runtime's layers, bottom to top: each its top-level module.
const RUNTIME: [&[&str]; 12] = [
    &["json"],
    &["vocabulary"],
    &["contract"],
    &["results"],
    &["binder"],
    &["providers"],
    &["control"],
    &["policy"],
    &["dispatch"],
    &["mcp"],
    &["rig"],
    &["console"],
];

/// The derive's layers, bottom to top: the vocabulary its phases share, then parse, check
/// and expand, each its files.
const DERIVE: [&[&str]; 4] = [
    &[
        "case",
        "ctxt",
        "forbidden",
        "lifetime",
        "symbol",
        "ty",
        "value",
    ],
    &["attr", "ast"],
    &["check", "model"],
    &["expand", "fallback"],
];

/// The runtime's layer names, for reports.
const LAYERS: [&str; 12] = [
    "json",
    "vocabulary",
    "contract",
    "results",
    "binder",
    "providers",
    "control",
    "policy",
    "dispatch",
    "mcp",
    "rig",
    "console",
];

/// Above every layer: the crate root and the modules that only re-export.
const FACADE: usize = usize::MAX;

thread_local! {
    /// The layers of the crate being read.
    static CRATE_LAYERS: std::cell::Cell<&'static [&'static [&'static str]]> =
        const { std::cell::Cell::new(&RUNTIME) };
}

/// The layer a module path (`["dispatch", "ledger"]`) belongs to, by its top-level module;
/// the root and the facade modules are above all.
fn layer_of(module: &[String]) -> usize {
    let layers = CRATE_LAYERS.with(std::cell::Cell::get);
    module
        .first()
        .and_then(|top| {
            layers
                .iter()
                .position(|layer| layer.contains(&top.as_str()))
        })
        .unwrap_or(FACADE)
}

/// The name of layer `layer` of the crate being read.
fn layer_name(layer: usize) -> String {
    let layers = CRATE_LAYERS.with(std::cell::Cell::get);
    match layers.get(layer) {
        None => "the facade".to_owned(),
        Some(_) if layers.len() == RUNTIME.len() => LAYERS[layer].to_owned(),
        Some(files) => format!("the {} layer", files[0]),
    }
}

/// Reads `files` as the crate whose layers are `layers`.
fn with_layers<T>(layers: &'static [&'static [&'static str]], read: impl FnOnce() -> T) -> T {
    let before = CRATE_LAYERS.with(|current| current.replace(layers));
    let answer = read();
    CRATE_LAYERS.with(|current| current.set(before));
    answer
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

/// Whether `c` may be part of an identifier.
fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The identifier at the start of `text` (empty when there is none).
fn ident_at(text: &str) -> &str {
    &text[..text.find(|c: char| !is_ident(c)).unwrap_or(text.len())]
}

/// The 1-based line of byte `at` of `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// One leaf of a `use` tree or a path in code: the path's segments as written, and the name it
/// binds (its alias, or its last segment).
type Leaf = (Vec<String>, String);

/// Every leaf of the `use` tree (or path in code) at the start of `text`, and the text after it:
/// `a::{b::{C, D as E}, self}` has the leaves `a::b::C`, `a::b::D` (bound as `E`) and `a`.
fn use_tree(text: &str) -> (Vec<Leaf>, &str) {
    let mut leaves = Vec::new();
    let rest = subtree(text, &mut Vec::new(), &mut leaves);
    (leaves, rest)
}

fn subtree<'t>(text: &'t str, prefix: &mut Vec<String>, leaves: &mut Vec<Leaf>) -> &'t str {
    let depth = prefix.len();
    let mut text = text.trim_start();
    let rest = loop {
        if let Some(group) = text.strip_prefix('{') {
            let mut rest = group;
            loop {
                rest = rest.trim_start();
                if let Some(after) = rest.strip_prefix('}') {
                    break rest = after;
                }
                if let Some(after) = rest.strip_prefix(',') {
                    rest = after;
                    continue;
                }
                let before = rest.len();
                rest = subtree(rest, prefix, leaves);
                if rest.len() == before {
                    // Not a tree (a brace in code): step over one character.
                    let step = rest.chars().next().map_or(0, char::len_utf8);
                    if step == 0 {
                        break;
                    }
                    rest = &rest[step..];
                }
            }
            break rest;
        }
        if let Some(after) = text.strip_prefix('*') {
            break after;
        }
        let segment = ident_at(text);
        if segment.is_empty() {
            // `a::<T>` in code: the path ends at `a`.
            push_leaf(prefix, depth, None, leaves);
            break text;
        }
        prefix.push(segment.to_owned());
        text = &text[segment.len()..];
        if let Some(after) = text.strip_prefix("::") {
            text = after;
            continue;
        }
        let after_space = text.trim_start();
        match after_space.strip_prefix("as ").map(str::trim_start) {
            Some(alias) => {
                let alias_name = ident_at(alias);
                push_leaf(prefix, depth, Some(alias_name), leaves);
                break &alias[alias_name.len()..];
            }
            None => {
                push_leaf(prefix, depth, None, leaves);
                break text;
            }
        }
    };
    prefix.truncate(depth);
    rest
}

/// Records the leaf `prefix` (a trailing `self` names the module before it) if it grew past
/// the `depth` its group started at.
fn push_leaf(prefix: &[String], depth: usize, alias: Option<&str>, leaves: &mut Vec<Leaf>) {
    if prefix.len() <= depth && depth > 0 || prefix.is_empty() {
        return;
    }
    let mut path = prefix.to_vec();
    if path.last().is_some_and(|last| last == "self") {
        path.pop();
    }
    let Some(last) = path.last() else { return };
    let name = alias.map_or_else(|| last.clone(), str::to_owned);
    leaves.push((path, name));
}

/// The names of the child modules a file declares (`mod name;`), not inline ones.
fn child_modules(code: &str) -> Vec<String> {
    child_declarations(code)
        .into_iter()
        .map(|declaration| {
            let text = code[declaration].trim_end_matches(';').trim_end();
            text[text.rfind(' ').map_or(0, |space| space + 1)..].to_owned()
        })
        .collect()
}

/// The byte range of each `mod name;` declaration in `code`, from `mod` to `;`.
fn child_declarations(code: &str) -> Vec<std::ops::Range<usize>> {
    let mut declarations = Vec::new();
    let mut at = 0;
    while let Some(offset) = code[at..].find("mod ") {
        let start = at + offset;
        at = start + 4;
        if start > 0 && code[..start].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let after_keyword = code[at..].trim_start();
        let name = ident_at(after_keyword);
        let after_name = after_keyword[name.len()..].trim_start();
        if !name.is_empty() && after_name.starts_with(';') {
            let end = code.len() - after_name.len() + 1;
            declarations.push(start..end);
            at = end;
        }
    }
    declarations
}

/// The module path a path written in `module` (whose file declares `children`) reaches, or
/// `None` for a path outside the crate: `crate::…` from the root, `super::…` from the parent,
/// `self::…` and a child's name from the module itself.
fn absolute(path: &[String], module: &[String], children: &[String]) -> Option<Vec<String>> {
    let first = path.first()?;
    let mut reached = match first.as_str() {
        "crate" => return Some(path[1..].to_vec()),
        "super" => module.to_vec(),
        "self" => return Some([module, &path[1..]].concat()),
        child if children.iter().any(|name| name == child) => {
            return Some([module, path].concat());
        }
        _ => return None,
    };
    let mut rest = path.iter().peekable();
    while rest.next_if(|segment| *segment == "super").is_some() {
        reached.pop();
    }
    reached.extend(rest.cloned());
    Some(reached)
}

/// Every path in `code` that names the crate (it starts at `crate`, `super`, `self` or one of
/// `children`), with the line it is on, as the module path it reaches from `module` (one per
/// leaf of a `{…}` group).
fn reached_paths(code: &str, module: &[String], children: &[String]) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let word = ident_at(rest);
        let starts_path = !word.is_empty()
            && rest[word.len()..].starts_with("::")
            && !code[..at]
                .chars()
                .next_back()
                .is_some_and(|c| is_ident(c) || c == '$' || c == ':');
        if !starts_path {
            let step = if word.is_empty() {
                rest.chars().next().map_or(1, char::len_utf8)
            } else {
                word.len()
            };
            at += step;
            continue;
        }
        let (leaves, after) = use_tree(rest);
        let line = line_of(code, at);
        found.extend(
            leaves
                .iter()
                .filter_map(|(path, _)| absolute(path, module, children))
                .map(|reached| (line, reached)),
        );
        at += (rest.len() - after.len()).max(word.len());
    }
    found
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
        // An inline test module's `super` is the file's module, not its parent: passed over.
        let code = without_test_modules(&code_only(source));
        for (line, reached) in reached_paths(&code, &module, &child_modules(&code)) {
            let target = layer_of(&reached);
            if target > own {
                upward.push(format!(
                    "src/{file}:{line}: {} imports from {} (`{}`)",
                    layer_name(own),
                    layer_name(target),
                    reached.join("::")
                ));
            }
        }
    }
    upward
}

/// `code` with each `#[cfg(test)] mod … { … }` blanked out (newlines kept).
fn without_test_modules(code: &str) -> String {
    let mut out = code.to_owned();
    let mut at = 0;
    while let Some(offset) = code[at..].find("#[cfg(test)]") {
        let start = at + offset;
        at = start + 1;
        let item = code[start + "#[cfg(test)]".len()..].trim_start();
        let Some(after_mod) = item.strip_prefix("mod ") else {
            continue;
        };
        let Some(open) = after_mod.find(['{', ';']) else {
            continue;
        };
        if after_mod.as_bytes()[open] == b';' {
            continue;
        }
        let body_start = code.len() - after_mod.len() + open;
        let mut depth = 0;
        let mut end = code.len();
        for (index, c) in code[body_start..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = body_start + index + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.replace_range(start..end, &blanked(&code[start..end]));
        at = end;
    }
    out
}

/// `text` as spaces, its newlines kept.
fn blanked(text: &str) -> String {
    text.chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect()
}

/// The `use` items of `code` that re-export (`pub use`, `pub(crate) use`, …): each item's byte
/// range.
fn reexport_items(code: &str) -> Vec<std::ops::Range<usize>> {
    let mut items = Vec::new();
    let mut at = 0;
    while let Some(offset) = code[at..].find("use ") {
        let start = at + offset;
        at = start + 4;
        if code[..start].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let before = code[..start].trim_end();
        let public = before.ends_with("pub")
            || (before.ends_with(')') && {
                let open = before.rfind('(').unwrap_or(0);
                before[..open].trim_end().ends_with("pub")
            });
        if !public {
            continue;
        }
        let end = code[start..]
            .find(';')
            .map_or(code.len(), |end| start + end + 1);
        items.push(start..end);
        at = end;
    }
    items
}

/// The source files of the crate's layers (the facade left out), as the compiler would look
/// names up in them.
struct Layers {
    files: Vec<LayerFile>,
}

struct LayerFile {
    /// The path under `src/`.
    name: String,
    module: Vec<String>,
    children: Vec<String>,
    /// Code without comments, strings and unit-test modules.
    code: String,
    /// The names its items define.
    defined: BTreeSet<String>,
    /// The names it re-exports, each with the module path it names.
    reexported: BTreeMap<String, Vec<String>>,
}

impl Layers {
    fn new(files: &[(String, String)]) -> Layers {
        let files = files
            .iter()
            .map(|(name, source)| {
                let module = module_of(name);
                let code = without_test_modules(&code_only(source));
                let children = child_modules(&code);
                let mut reexported = BTreeMap::new();
                for item in reexport_items(&code) {
                    let tree = code[item].trim_start_matches("use ").trim_end_matches(';');
                    for (path, bound) in use_tree(tree).0 {
                        if let Some(target) = absolute(&path, &module, &children) {
                            reexported.insert(bound, target);
                        }
                    }
                }
                LayerFile {
                    name: name.clone(),
                    defined: defined_names(&code),
                    module,
                    children,
                    code,
                    reexported,
                }
            })
            .collect();
        Layers { files }
    }

    fn file_of_module(&self, module: &[String]) -> Option<usize> {
        self.files.iter().position(|file| file.module == module)
    }

    /// The files `path` (from the crate root) depends on: the one that defines what it names
    /// (its modules are walked, then its first item is looked up in the last module's file),
    /// and each file whose re-export it goes through on the way.
    fn resolve(&self, path: &[String], hops: usize) -> Vec<usize> {
        let mut module: Vec<String> = Vec::new();
        for segment in path {
            let mut child = module.clone();
            child.push(segment.clone());
            if self
                .files
                .iter()
                .any(|file| file.module.starts_with(&child))
            {
                module = child;
                continue;
            }
            let Some(here) = self.file_of_module(&module) else {
                return Vec::new();
            };
            let file = &self.files[here];
            if !file.defined.contains(segment)
                && hops < 16
                && let Some(target) = file.reexported.get(segment)
            {
                let mut reached = self.resolve(target, hops + 1);
                reached.push(here);
                return reached;
            }
            return vec![here];
        }
        self.file_of_module(&module).into_iter().collect()
    }

    /// Each file's dependencies on other files of its own layer, by index.
    fn dependencies(&self) -> Vec<BTreeSet<usize>> {
        self.files
            .iter()
            .enumerate()
            .map(|(index, file)| {
                let mut code = file.code.clone();
                for item in reexport_items(&file.code) {
                    let blank = blanked(&code[item.clone()]);
                    code.replace_range(item, &blank);
                }
                // A name re-exported and also used by the file's own code is a dependency
                // (a `mod` declaration of the same name is no use of it).
                let declarations = child_declarations(&code);
                for declaration in declarations {
                    let blank = blanked(&code[declaration.clone()]);
                    code.replace_range(declaration, &blank);
                }
                let used_reexports = file
                    .reexported
                    .iter()
                    .filter(|(name, _)| uses_word(&code, name))
                    .map(|(_, target)| target.clone());
                let layer = layer_of(&file.module);
                reached_paths(&code, &file.module, &file.children)
                    .into_iter()
                    .map(|(_, reached)| reached)
                    .chain(used_reexports)
                    .flat_map(|reached| self.resolve(&reached, 0))
                    .filter(|&target| {
                        target != index && layer_of(&self.files[target].module) == layer
                    })
                    .collect()
            })
            .collect()
    }

    /// Every circle of files that import each other, each as `a.rs -> b.rs -> a.rs`, one per
    /// knot of files that all reach each other.
    fn cycles(&self) -> Vec<String> {
        let edges = self.dependencies();
        let reach = |from: usize| {
            let mut seen = BTreeSet::from([from]);
            let mut todo = vec![from];
            while let Some(at) = todo.pop() {
                for &next in &edges[at] {
                    if seen.insert(next) {
                        todo.push(next);
                    }
                }
            }
            seen
        };
        let reached: Vec<BTreeSet<usize>> = (0..self.files.len()).map(reach).collect();
        let mut knotted = BTreeSet::new();
        let mut cycles = Vec::new();
        for start in 0..self.files.len() {
            if knotted.contains(&start) {
                continue;
            }
            let knot: BTreeSet<usize> = reached[start]
                .iter()
                .copied()
                .filter(|&other| other != start && reached[other].contains(&start))
                .collect();
            if knot.is_empty() {
                continue;
            }
            knotted.extend(knot.iter().copied());
            knotted.insert(start);
            cycles.push(self.shortest_cycle(start, &edges));
        }
        cycles
    }

    /// The shortest way from `start` back to itself, as file names joined by ` -> `.
    fn shortest_cycle(&self, start: usize, edges: &[BTreeSet<usize>]) -> String {
        let mut came_from: BTreeMap<usize, usize> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut closing = start;
        while let Some(at) = queue.pop_front() {
            if edges[at].contains(&start) {
                closing = at;
                break;
            }
            for &next in &edges[at] {
                if next != start && !came_from.contains_key(&next) {
                    came_from.insert(next, at);
                    queue.push_back(next);
                }
            }
        }
        let mut way = vec![start];
        let mut at = closing;
        while at != start {
            way.push(at);
            at = came_from[&at];
        }
        way.push(start);
        way.reverse();
        way.iter()
            .map(|&index| self.files[index].name.as_str())
            .collect::<Vec<_>>()
            .join(" -> ")
    }
}

/// The names `code`'s items define: types, traits, functions, constants, statics, inline
/// modules and macros.
fn defined_names(code: &str) -> BTreeSet<String> {
    const KEYWORDS: [&str; 10] = [
        "struct ",
        "enum ",
        "trait ",
        "fn ",
        "type ",
        "const ",
        "static ",
        "union ",
        "mod ",
        "macro_rules! ",
    ];
    let mut names = BTreeSet::new();
    for keyword in KEYWORDS {
        let mut at = 0;
        while let Some(offset) = code[at..].find(keyword) {
            let start = at + offset;
            at = start + keyword.len();
            if code[..start].chars().next_back().is_some_and(is_ident) {
                continue;
            }
            let name = ident_at(code[at..].trim_start());
            if !name.is_empty() {
                names.insert(name.to_owned());
            }
        }
    }
    names
}

/// Whether `word` stands as a whole identifier somewhere in `code`.
fn uses_word(code: &str, word: &str) -> bool {
    code.match_indices(word).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// The `src/` of the workspace's crate `name`.
fn source_root(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name)
        .join("src")
}

/// The layer files of the crate at `root` (the facade and the commands left out).
fn layer_files(root: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    sources(root, root, &mut files);
    files.retain(|(name, _)| layer_of(&module_of(name)) != FACADE && !name.starts_with("bin/"));
    files
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
fn no_module_of_the_runtime_imports_from_a_layer_above_its_own() {
    let files = layer_files(&source_root("tool-contract"));
    assert!(files.len() > 40, "the sources were found: {}", files.len());
    let upward = upward_imports(&files);
    assert!(
        upward.is_empty(),
        "imports that run upward:\n{}",
        upward.join("\n")
    );
}

#[test]
fn no_phase_of_the_derive_imports_from_a_later_one() {
    let upward = with_layers(&DERIVE, || {
        let files = layer_files(&source_root("tool-contract-derive"));
        assert!(files.len() > 10, "the sources were found: {}", files.len());
        upward_imports(&files)
    });
    assert!(
        upward.is_empty(),
        "imports that run upward:\n{}",
        upward.join("\n")
    );
}

#[test]
fn every_file_of_the_derive_is_in_a_phase_or_the_facade() {
    let root = source_root("tool-contract-derive");
    for entry in std::fs::read_dir(&root).expect("src/ reads") {
        let name = entry.expect("an entry").file_name();
        let name = name.to_string_lossy();
        let stem = name.trim_end_matches(".rs");
        assert!(
            stem == "lib" || DERIVE.iter().any(|phase| phase.contains(&stem)),
            "tool-contract-derive/src/{name} is in no phase: add it to DERIVE"
        );
    }
}

#[test]
fn every_top_level_module_is_a_layer_or_the_facade() {
    let root = source_root("tool-contract");
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
            layer_of(std::slice::from_ref(top)) != FACADE
                || ["lib", "__private", "evidence", "guide", "prelude"].contains(&top.as_str())
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

#[test]
fn no_files_of_the_runtime_import_each_other_in_a_circle() {
    let files = layer_files(&source_root("tool-contract"));
    assert!(files.len() > 40, "the sources were found: {}", files.len());
    let cycles = Layers::new(&files).cycles();
    assert!(
        cycles.is_empty(),
        "files that import each other in a circle:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn no_files_of_the_derive_import_each_other_in_a_circle() {
    let cycles = with_layers(&DERIVE, || {
        let files = layer_files(&source_root("tool-contract-derive"));
        Layers::new(&files).cycles()
    });
    assert!(
        cycles.is_empty(),
        "files that import each other in a circle:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn two_files_of_one_phase_of_the_derive_that_import_each_other_are_a_cycle() {
    // The circle the derive had: the typed input naming the checked model's tool name, the
    // model naming the input's fields.
    let files = [
        file(
            "ast.rs",
            "use crate::model::ToolName;\npub struct Field;\npub struct Contract;\n",
        ),
        file("attr.rs", "use crate::ast::Field;\npub struct ToolName;\n"),
        file("model.rs", "use crate::ast::Field;\npub struct ToolName;\n"),
    ];
    let cycles = with_layers(&[&[], &["ast", "attr", "model"]], || {
        Layers::new(&files).cycles()
    });
    assert_eq!(cycles, ["ast.rs -> model.rs -> ast.rs"]);
}

#[test]
fn a_path_through_a_reexport_depends_on_the_file_that_makes_it() {
    // The circle the control plane had: the directory named the seal through the store's
    // re-export, the store's own code used the steps, and the steps the directory.
    let files = [
        file(
            "control/directory.rs",
            "use super::store::RowSeal;\npub struct DirectoryChange;\n",
        ),
        file(
            "control/store/mod.rs",
            "mod seal;\npub use seal::RowSeal;\nuse super::step::Claim;\npub trait ControlStore { fn claim(&self, claim: Claim); }\n",
        ),
        file("control/store/seal.rs", "pub struct RowSeal;\n"),
        file(
            "control/step.rs",
            "use super::directory::DirectoryChange;\npub struct Claim(DirectoryChange);\n",
        ),
        file("control/mod.rs", "mod directory;\nmod step;\nmod store;\n"),
    ];
    assert_eq!(
        Layers::new(&files).cycles(),
        ["control/directory.rs -> control/store/mod.rs -> control/step.rs -> control/directory.rs"]
    );
}

#[test]
fn two_files_that_import_each_other_are_a_cycle() {
    let files = [
        file(
            "contract/field.rs",
            "use super::traits::ToolContract;\npub trait ContractField {}\n",
        ),
        file(
            "contract/traits.rs",
            "use crate::contract::field::ContractField;\npub trait ToolContract {}\n",
        ),
        file("contract/mod.rs", "mod field;\nmod traits;\n"),
    ];
    assert_eq!(
        Layers::new(&files).cycles(),
        ["contract/field.rs -> contract/traits.rs -> contract/field.rs"]
    );
}

#[test]
fn a_cycle_is_followed_through_reexports_and_paths_in_code() {
    let files = [
        file(
            "dispatch/store/mod.rs",
            "mod memory;\npub use memory::MemoryStore;\npub struct Lease;\n\
             fn f() -> crate::dispatch::Approved { todo!() }\n",
        ),
        file("dispatch/store/memory.rs", "pub struct MemoryStore;\n"),
        file(
            "dispatch/mod.rs",
            "mod approval;\npub mod store;\npub use approval::{Approved as Approved};\n",
        ),
        file(
            "dispatch/approval.rs",
            "use super::store::{self, Lease};\npub enum Approved {}\n",
        ),
    ];
    assert_eq!(
        Layers::new(&files).cycles(),
        ["dispatch/store/mod.rs -> dispatch/approval.rs -> dispatch/store/mod.rs"]
    );
}

#[test]
fn a_reexport_the_file_also_uses_is_a_dependency() {
    let files = [
        file(
            "control/audit_log/mod.rs",
            "mod record;\nmod verifier;\npub(crate) use record::Verifier;\npub use verifier::verifier;\n\
             pub struct ChainHead;\n\
             pub fn verify() { Verifier::new(); }\n",
        ),
        file(
            "control/audit_log/record.rs",
            "use super::ChainHead;\npub struct Verifier;\n",
        ),
        // Re-exported under its module's name, and not used: no dependency.
        file(
            "control/audit_log/verifier.rs",
            "use super::ChainHead;\npub fn verifier() {}\n",
        ),
    ];
    assert_eq!(
        Layers::new(&files).cycles(),
        ["control/audit_log/mod.rs -> control/audit_log/record.rs -> control/audit_log/mod.rs"]
    );
}

#[test]
fn a_mod_rs_that_reexports_its_children_and_their_tests_make_no_cycle() {
    let files = [
        file(
            "results/mod.rs",
            "mod audit;\nmod digest;\npub use audit::Audit;\npub(crate) use digest::{self, Digest};\n",
        ),
        file(
            "results/audit.rs",
            "use super::Digest;\npub struct Audit;\n",
        ),
        file(
            "results/digest.rs",
            "pub struct Digest;\n#[cfg(test)]\nmod tests {\n    use super::super::Audit;\n}\n",
        ),
    ];
    assert_eq!(Layers::new(&files).cycles(), Vec::<String>::new());
}

#[test]
fn the_files_of_two_layers_are_no_cycle() {
    // An upward import is reported by its own check; the circle it closes is not a
    // circle inside a layer.
    let files = [
        file(
            "json/scan.rs",
            "use crate::results::Audit;\npub fn scan() {}\n",
        ),
        file("results/mod.rs", "mod audit;\npub use audit::Audit;\n"),
        file(
            "results/audit.rs",
            "use crate::json::scan::scan;\npub struct Audit;\n",
        ),
    ];
    assert_eq!(Layers::new(&files).cycles(), Vec::<String>::new());
}
