//! A page of a JSON Lines log read from its files' ends: the records before a given one
//! found by a binary search over byte offsets, the page read backwards from there, so that
//! nothing before the page is read.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::PathBuf;

use super::record::line_seq;

/// How much of a file one backward read takes.
const CHUNK: u64 = 64 * 1024;

/// At most `count` whole lines of `files` (newest file first, each holding consecutive
/// records) whose records come before `end` (every record for `None`), oldest first.
pub(super) fn newest_before(
    files: &[PathBuf],
    end: Option<u64>,
    count: usize,
) -> io::Result<Vec<Vec<u8>>> {
    let mut newest_first: Vec<Vec<u8>> = Vec::new();
    for path in files {
        if newest_first.len() >= count {
            break;
        }
        let mut file = match File::open(path) {
            Ok(file) => file,
            // A segment removed by retention: the chain's page ends where its files do.
            Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
            Err(error) => return Err(error),
        };
        let length = file.metadata()?.len();
        let stop = match end {
            Some(end) => first_line_from(&mut file, length, end)?,
            None => length,
        };
        read_backwards(
            &mut file,
            stop,
            count - newest_first.len(),
            &mut newest_first,
        )?;
    }
    newest_first.reverse();
    Ok(newest_first)
}

/// The offset of the first whole line in `file` whose record is `end` or later (`length`
/// if none is): lines number their records in order, so a binary search over offsets finds
/// it reading a line or two per step.
fn first_line_from(file: &mut File, length: u64, end: u64) -> io::Result<u64> {
    let (mut low, mut high) = (0, length);
    while low < high {
        let middle = low + (high - low) / 2;
        // A line that does not read as a record is taken as past the end: the page stops
        // before it, and the verifier of the page says what is wrong where it is read.
        let at_or_past =
            line_from(file, middle)?.is_none_or(|(_, seq)| seq.is_none_or(|seq| seq >= end));
        if at_or_past {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    Ok(line_from(file, low)?.map_or(length, |(start, _)| start))
}

/// The first whole line starting at or after `offset`: where it starts and the record
/// number it gives itself. `None` when no whole line (one that ends in a newline) does.
fn line_from(file: &mut File, offset: u64) -> io::Result<Option<(u64, Option<u64>)>> {
    let from = offset.saturating_sub(1);
    file.seek(SeekFrom::Start(from))?;
    let mut reader = BufReader::new(&mut *file);
    let mut start = offset;
    if offset > 0 {
        // The rest of the line `offset` falls in (just its newline, when a line starts at
        // `offset`).
        let mut skipped = Vec::new();
        let read = reader.read_until(b'\n', &mut skipped)?;
        if skipped.last() != Some(&b'\n') {
            return Ok(None);
        }
        start = from + read as u64;
    }
    let mut line = Vec::new();
    reader.read_until(b'\n', &mut line)?;
    if line.pop() != Some(b'\n') {
        return Ok(None);
    }
    Ok(Some((start, line_seq(&line))))
}

/// Pushes onto `newest_first` at most `count` whole lines of `file` ending at or before
/// `stop`, newest first. A torn line at `stop` (one without its newline yet) is left out.
fn read_backwards(
    file: &mut File,
    stop: u64,
    count: usize,
    newest_first: &mut Vec<Vec<u8>>,
) -> io::Result<()> {
    let mut position = stop;
    // The bytes between `position` and the last newline not yet split into lines.
    let mut pending: Vec<u8> = Vec::new();
    let mut whole = false;
    let mut taken = 0;
    while taken < count && position > 0 {
        let size = CHUNK.min(position);
        position -= size;
        file.seek(SeekFrom::Start(position))?;
        let mut chunk = vec![0; usize::try_from(size).unwrap_or(usize::MAX)];
        file.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&pending);
        pending = chunk;
        if !whole {
            // Only what ends in a newline counts; before any is found, keep reading.
            match pending.iter().rposition(|&byte| byte == b'\n') {
                Some(last) => {
                    pending.truncate(last + 1);
                    whole = true;
                }
                None => continue,
            }
        }
        // `pending` ends with a newline: split off the lines after the one before it.
        while taken < count {
            let body = &pending[..pending.len() - 1];
            match body.iter().rposition(|&byte| byte == b'\n') {
                Some(before) => {
                    newest_first.push(body[before + 1..].to_vec());
                    pending.truncate(before + 1);
                    taken += 1;
                }
                None if position == 0 => {
                    newest_first.push(body.to_vec());
                    pending.clear();
                    taken += 1;
                    break;
                }
                None => break,
            }
        }
        if pending.is_empty() {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn line(seq: u64, padding: usize) -> String {
        format!("{{\"pad\":\"{}\",\"seq\":{seq}}}", "x".repeat(padding))
    }

    /// A directory of its own for `name`, emptied.
    fn directory(name: &str) -> PathBuf {
        let directory =
            std::env::temp_dir().join(format!("file-page-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&directory);
        std::fs::create_dir_all(&directory).unwrap();
        directory
    }

    fn file_of(name: &str, lines: &[String], torn: &str) -> PathBuf {
        let path = directory(name).join("log.jsonl");
        let mut file = File::create(&path).unwrap();
        for line in lines {
            writeln!(file, "{line}").unwrap();
        }
        write!(file, "{torn}").unwrap();
        path
    }

    fn seqs(lines: &[Vec<u8>]) -> Vec<u64> {
        lines.iter().map(|line| line_seq(line).unwrap()).collect()
    }

    #[test]
    fn a_page_before_any_record_of_any_length_is_found_and_read_whole() {
        // Lines of many lengths, some longer than a backward read, so that searches and
        // reads land anywhere in a line.
        let lines: Vec<String> = (1..=60)
            .map(|seq| line(seq, (seq as usize * 7919) % 90_000))
            .collect();
        let path = file_of("lengths", &lines, "{\"torn");
        let files = [path];
        for end in 1..=62 {
            for count in [1, 3, 60] {
                let page = newest_before(&files, Some(end), count).unwrap();
                let last = end.saturating_sub(1).min(60);
                let first = last.saturating_sub(count as u64) + 1;
                assert_eq!(
                    seqs(&page),
                    (first..=last).collect::<Vec<_>>(),
                    "{end} {count}"
                );
            }
        }
        let newest = newest_before(&files, None, 2).unwrap();
        assert_eq!(seqs(&newest), [59, 60], "the torn tail is left out");
    }

    #[test]
    fn a_page_goes_on_into_the_segment_before() {
        let older: Vec<String> = (1..=4).map(|seq| line(seq, 10)).collect();
        let newer: Vec<String> = (5..=6).map(|seq| line(seq, 10)).collect();
        let segment = file_of("older", &older, "");
        let active = file_of("newer", &newer, "");
        let files = [active, segment];
        assert_eq!(seqs(&newest_before(&files, None, 4).unwrap()), [3, 4, 5, 6]);
        assert_eq!(seqs(&newest_before(&files, Some(5), 2).unwrap()), [3, 4]);
        assert!(newest_before(&files, Some(1), 2).unwrap().is_empty());
    }

    #[test]
    fn a_segment_that_cannot_be_read_is_not_read_when_the_page_ends_before_it() {
        let newer: Vec<String> = (5..=6).map(|seq| line(seq, 10)).collect();
        let active = file_of("unread", &newer, "");
        // Where the older segment would be: a directory, which no read gets through.
        let files = [active, directory("unreadable")];
        assert_eq!(seqs(&newest_before(&files, None, 2).unwrap()), [5, 6]);
        assert!(newest_before(&files, None, 3).is_err());
    }
}
