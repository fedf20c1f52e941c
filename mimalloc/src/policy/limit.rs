//! The memory limit of the process's cgroup, which a container runtime sets (cgroup v2
//! `memory.max` and `memory.high`, cgroup v1 `memory.limit_in_bytes`; the lowest of the
//! process's cgroup and every cgroup above it). Memory mimalloc holds after a free counts
//! against that limit until it is purged: a program that frees a burst, goes quiet and then
//! needs the memory in another form (a C library's, a child's, its own `mmap`) is killed by the
//! kernel while mimalloc still holds what it freed. Under a limit the background purge looks
//! every [`TICK_MS`] ms, and once the process's resident memory has passed half the limit it
//! purges everything freed at once, instead of after the purge delay (`purge.rs`).
//!
//! Read once, by the purge's thread when it starts (a program too small to start it has little
//! to give back), so that a program pays for the few files only once it is large; a child
//! after `fork` starts its own thread and reads it again. Nothing here allocates: the thread
//! reads with `open`/`read` into buffers on its stack.

use super::io::say;
use super::state::states;
use super::state::MemoryLimit;
use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// How often the purge's thread looks at the resident memory under a limit: often enough that a
/// program that frees a burst and then needs the memory in another form finds it given back
/// (1 s of quiet in `tests/tests/memory_limit.rs`), seldom enough to cost nothing (a look reads one
/// small file).
pub(crate) const TICK_MS: i64 = 100;

states! {
    /// Whether the limit has been read, and what was found.
    enum Reading in AtomicReading {
        /// Not yet: the purge's thread has not started.
        Unread,
        /// No limit: no memory cgroup, or none of its files says one.
        Unlimited,
        /// `LIMIT` holds the limit.
        Limited,
    }
}

static READING: AtomicReading = AtomicReading::new(Reading::Unread);
static LIMIT: AtomicUsize = AtomicUsize::new(0);
/// The cgroup version the limit was read from (1 or 2).
static VERSION: AtomicU8 = AtomicU8::new(0);
/// How many times the thread purged at once because the process was past half its limit.
static PROMPT_PURGES: AtomicUsize = AtomicUsize::new(0);

/// The limit as a program sees it ([`crate::policy::memory_limit`]).
pub(crate) fn state() -> MemoryLimit {
    match READING.load(Ordering::Acquire) {
        Reading::Unread => MemoryLimit::Unread,
        Reading::Unlimited => MemoryLimit::Unlimited,
        Reading::Limited => {
            let bytes = LIMIT.load(Ordering::Relaxed);
            MemoryLimit::Limited {
                bytes,
                cgroup: VERSION.load(Ordering::Relaxed),
                purge_from: purge_from(bytes),
                prompt_purges: PROMPT_PURGES.load(Ordering::Relaxed),
            }
        }
    }
}

/// The resident size past which freed memory goes back at once: half the limit, so that what
/// the program freed can be needed again in another form (a burst freed, then as much taken by
/// a library, a child or `mmap`) without reaching the limit.
fn purge_from(limit: usize) -> usize {
    limit / 2
}

/// Reads the limit (the purge's thread, as it starts), publishes it, and returns it.
pub(crate) fn read() -> Option<usize> {
    let found = cgroup::limit();
    match found {
        Some((bytes, version)) => {
            LIMIT.store(bytes, Ordering::Relaxed);
            VERSION.store(version, Ordering::Relaxed);
            READING.store(Reading::Limited, Ordering::Release);
            say(
                false,
                format_args!(
                    "memory limit {} MiB (cgroup v{version}): a look every {TICK_MS} ms, and freed \
                     memory goes back at once past {} MiB resident",
                    bytes >> 20,
                    purge_from(bytes) >> 20
                ),
            );
        }
        None => READING.store(Reading::Unlimited, Ordering::Release),
    }
    found.map(|(bytes, _)| bytes)
}

/// Whether the process is past the point where freed memory must go back at once; says so when
/// it first gets there and when it comes back below.
pub(crate) fn pressed(limit: usize, was: bool) -> bool {
    let resident = match file::resident() {
        Some(resident) => resident,
        None => return false,
    };
    let now = resident >= purge_from(limit);
    if now != was {
        say(
            false,
            format_args!(
                "{} MiB resident, {} half the memory limit: {}",
                resident >> 20,
                if now { "past" } else { "back under" },
                if now {
                    "freed memory goes back at once"
                } else {
                    "purges wait for the delay again"
                }
            ),
        );
    }
    if now {
        PROMPT_PURGES.fetch_add(1, Ordering::Relaxed);
    }
    now
}

/// A child after `fork`: it reads the limit again when it starts its thread.
pub(crate) fn forget() {
    READING.store(Reading::Unread, Ordering::Relaxed);
    PROMPT_PURGES.store(0, Ordering::Relaxed);
}

/// Where the process's memory cgroup is and what it says.
mod cgroup {
    use super::file::{self, Path};

    /// The lowest memory limit over the process's cgroup and its ancestors, and the cgroup
    /// version it was read from; `None` where there is none.
    pub(super) fn limit() -> Option<(usize, u8)> {
        // A host with both hierarchies (hybrid) has the memory controller in v1's.
        for version in [1, 2] {
            if let Some(limit) = limit_in(version) {
                return limit.map(|bytes| (bytes, version));
            }
        }
        None
    }

    /// In the hierarchy of `version`: `None` if the process is not in it, `Some(None)` if it
    /// is and no limit is set.
    fn limit_in(version: u8) -> Option<Option<usize>> {
        let cgroup = file::find_line(b"/proc/self/cgroup\0", |line| {
            Path::from(cgroup_of(version, line)?)
        })?;
        let (root, mut dir) = file::find_line(b"/proc/self/mountinfo\0", |line| {
            let (root, point) = mount_of(version, line)?;
            Some((Path::from(root)?, Path::from(point)?))
        })?;
        // The mount shows the cgroup `root` (a cgroup namespace's or a container's bind mount
        // shows the process's own or one above it): its files first, then each cgroup on the
        // way down to the process's.
        let mut lowest = lower(None, &dir, version);
        for step in below_root(cgroup.bytes(), root.bytes())
            .split(|&b| b == b'/')
            .filter(|step| !step.is_empty())
        {
            if !dir.push_component(step) {
                return None;
            }
            lowest = lower(lowest, &dir, version);
        }
        Some(lowest)
    }

    /// The lower of `lowest` and the limits `dir` sets.
    fn lower(lowest: Option<usize>, dir: &Path, version: u8) -> Option<usize> {
        limit_files(version)
            .iter()
            .filter_map(|name| file::limit(dir, name))
            .chain(lowest)
            .min()
    }

    /// The part of `cgroup` below the mount's `root`: all of it under a root mount, the rest
    /// of it where the root is the cgroup or one above it, nothing where the mount shows a
    /// cgroup elsewhere (a namespace's root that is not an ancestor: its own files are read).
    pub(super) fn below_root<'a>(cgroup: &'a [u8], root: &[u8]) -> &'a [u8] {
        if root == b"/" {
            return cgroup;
        }
        match cgroup.strip_prefix(root) {
            Some(rest) if rest.is_empty() || rest.starts_with(b"/") => rest,
            _ => b"",
        }
    }

    /// The files that set a limit, in each version.
    pub(super) fn limit_files(version: u8) -> &'static [&'static [u8]] {
        if version == 1 {
            &[b"memory.limit_in_bytes"]
        } else {
            &[b"memory.max", b"memory.high"]
        }
    }

    /// The process's cgroup in the hierarchy of `version`, if `line` of `/proc/self/cgroup`
    /// names it: `0::PATH` for v2, `N:...,memory,...:PATH` for v1's memory controller.
    pub(super) fn cgroup_of(version: u8, line: &[u8]) -> Option<&[u8]> {
        let mut fields = line.splitn(3, |&b| b == b':');
        let (id, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let wanted = if version == 2 {
            id == b"0" && controllers.is_empty()
        } else {
            controllers.split(|&b| b == b',').any(|c| c == b"memory")
        };
        if wanted {
            Some(path)
        } else {
            None
        }
    }

    /// The root (the cgroup it shows) and the mount point of the hierarchy of `version`, if
    /// `line` of `/proc/self/mountinfo` is its mount:
    /// `ID PARENT DEV ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER_OPTIONS`.
    pub(super) fn mount_of(version: u8, line: &[u8]) -> Option<(&[u8], &[u8])> {
        let split = line.windows(3).position(|w| w == b" - ")?;
        let mut before = line[..split].split(|&b| b == b' ').skip(3);
        let (root, point) = (before.next()?, before.next()?);
        let mut after = line[split + 3..].split(|&b| b == b' ');
        let (kind, _source, options) = (after.next()?, after.next()?, after.next()?);
        let wanted = if version == 2 {
            kind == b"cgroup2"
        } else {
            kind == b"cgroup" && options.split(|&b| b == b',').any(|o| o == b"memory")
        };
        if wanted {
            Some((root, point))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::cgroup::{below_root, cgroup_of, limit_files, mount_of};

    #[test]
    fn a_cgroup_path_continues_below_its_mount() {
        assert_eq!(below_root(b"/a/b", b"/"), b"/a/b");
        assert_eq!(below_root(b"/docker/abc", b"/docker/abc"), b"");
        assert_eq!(below_root(b"/docker/abc/x", b"/docker/abc"), b"/x");
        assert_eq!(below_root(b"/docker/abcdef", b"/docker/abc"), b"");
        assert_eq!(below_root(b"/", b"/other"), b"");
    }

    #[test]
    fn the_cgroup_is_read_from_its_line_in_each_version() {
        let hybrid: [&[u8]; 3] = [b"4:memory:/process_api/f4", b"3:cpu,cpuacct:/x", b"0::/u"];
        let found = |version| hybrid.iter().find_map(|line| cgroup_of(version, line));
        assert_eq!(found(1), Some(b"/process_api/f4" as &[u8]));
        assert_eq!(found(2), Some(b"/u" as &[u8]));
        assert_eq!(
            cgroup_of(1, b"5:cpuset,memory:/a:b"),
            Some(b"/a:b" as &[u8])
        );
        assert_eq!(cgroup_of(1, b"5:memoryx:/a"), None);
        assert_eq!(cgroup_of(2, b"1:name=systemd:/"), None);
        assert_eq!(cgroup_of(2, b"0:memory:/"), None);
        assert_eq!(cgroup_of(2, b"0:/"), None, "three fields");
    }

    #[test]
    fn the_mount_is_read_from_its_line_in_each_version() {
        let v1: &[u8] =
            b"35 31 0:32 /docker/a /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory";
        let v2: &[u8] = b"41 31 0:38 / /sys/fs/cgroup/unified rw shared:9 - cgroup2 cgroup2 rw";
        let cpu: &[u8] = b"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu";
        let tmpfs: &[u8] = b"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755";
        let mounts = [tmpfs, cpu, v1, v2];
        let found = |version| mounts.iter().find_map(|line| mount_of(version, line));
        let memory: (&[u8], &[u8]) = (b"/docker/a", b"/sys/fs/cgroup/memory");
        assert_eq!(found(1), Some(memory));
        let unified: (&[u8], &[u8]) = (b"/", b"/sys/fs/cgroup/unified");
        assert_eq!(
            found(2),
            Some(unified),
            "a hybrid host's v2 mount, not the tmpfs above it"
        );
        assert_eq!(
            mount_of(1, b"35 31 0:32 / /m rw - cgroup cgroup"),
            None,
            "no options"
        );
    }

    #[test]
    fn each_version_names_its_limit_files() {
        assert_eq!(limit_files(1), [b"memory.limit_in_bytes" as &[u8]]);
        assert_eq!(limit_files(2), [b"memory.max" as &[u8], b"memory.high"]);
    }
}

/// Files read without allocating: lines through a buffer on the stack, paths built in one.
mod file {
    /// A path of up to 1023 bytes, NUL-terminated when opened.
    pub(super) struct Path {
        bytes: [u8; 1024],
        len: usize,
    }

    impl Path {
        pub(super) fn from(text: &[u8]) -> Option<Path> {
            let mut path = Path {
                bytes: [0; 1024],
                len: 0,
            };
            if path.push(text) {
                Some(path)
            } else {
                None
            }
        }

        pub(super) fn bytes(&self) -> &[u8] {
            &self.bytes[..self.len]
        }

        /// Appends `text`; whether it fit (with room left for a NUL).
        pub(super) fn push(&mut self, text: &[u8]) -> bool {
            if self.len + text.len() >= self.bytes.len() {
                return false;
            }
            self.bytes[self.len..self.len + text.len()].copy_from_slice(text);
            self.len += text.len();
            true
        }

        /// Appends `/` and `name`; whether both fit (nothing is appended otherwise).
        pub(super) fn push_component(&mut self, name: &[u8]) -> bool {
            let len = self.len;
            if self.push(b"/") && self.push(name) {
                return true;
            }
            self.len = len;
            false
        }

        /// This path, `/` and `name`, NUL-terminated, in `out`; whether it fit.
        fn join(&self, name: &[u8], out: &mut [u8; 1024]) -> bool {
            let len = self.len + 1 + name.len();
            if len >= out.len() {
                return false;
            }
            out[..self.len].copy_from_slice(self.bytes());
            out[self.len] = b'/';
            out[self.len + 1..len].copy_from_slice(name);
            out[len] = 0;
            true
        }
    }

    /// The file `name` in `dir` as a limit: a number of bytes, or `None` for `max` (no limit),
    /// a missing file, or a figure beyond any machine (cgroup v1 writes "no limit" as about
    /// 2^63).
    pub(super) fn limit(dir: &Path, name: &[u8]) -> Option<usize> {
        let mut path = [0; 1024];
        if !dir.join(name, &mut path) {
            return None;
        }
        let value = find_line(&path, number)?;
        if value >= 1 << 62 {
            None
        } else {
            usize::try_from(value).ok()
        }
    }

    /// The process's resident memory (`/proc/self/statm`, its second field, in pages).
    pub(crate) fn resident() -> Option<usize> {
        let pages = find_line(b"/proc/self/statm\0", |line| {
            number(line.split(|&b| b == b' ').nth(1)?)
        })?;
        // SAFETY: `sysconf` has no precondition.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(pages).ok()?.checked_mul(page as usize)
    }

    /// A decimal number and nothing else.
    fn number(text: &[u8]) -> Option<u64> {
        if text.is_empty() {
            return None;
        }
        text.iter().try_fold(0u64, |n, &b| {
            let digit = b.checked_sub(b'0').filter(|d| *d < 10)?;
            n.checked_mul(10)?.checked_add(u64::from(digit))
        })
    }

    /// The first `Some` that `each` returns for a line of the file at `path` (NUL-terminated),
    /// without its newline. Lines longer than the buffer (4 KiB) are skipped.
    pub(super) fn find_line<T>(path: &[u8], mut each: impl FnMut(&[u8]) -> Option<T>) -> Option<T> {
        // SAFETY: `path` is NUL-terminated (every caller passes a literal ending in `\0` or a
        // path `join` terminated).
        let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd == -1 {
            return None;
        }
        let mut buffer = [0u8; 4096];
        let (mut held, mut skipping) = (0, false);
        let found = loop {
            // SAFETY: reads into the free part of a live buffer.
            let read =
                unsafe { libc::read(fd, buffer[held..].as_mut_ptr().cast(), buffer.len() - held) };
            if read <= 0 {
                // The last line may end without a newline.
                let last = &buffer[..held];
                break if held > 0 && !skipping {
                    each(last)
                } else {
                    None
                };
            }
            held += read as usize;
            let mut start = 0;
            let mut found = None;
            while let Some(end) = buffer[start..held].iter().position(|&b| b == b'\n') {
                let line = &buffer[start..start + end];
                start += end + 1;
                if core::mem::replace(&mut skipping, false) {
                    continue;
                }
                found = each(line);
                if found.is_some() {
                    break;
                }
            }
            if found.is_some() {
                break found;
            }
            buffer.copy_within(start..held, 0);
            held -= start;
            if held == buffer.len() {
                // A line longer than the buffer: skip to its end.
                held = 0;
                skipping = true;
            }
        };
        // SAFETY: closes the descriptor opened above.
        unsafe { libc::close(fd) };
        found
    }

    #[cfg(test)]
    mod tests {
        extern crate std;
        use super::{find_line, number, Path};
        use std::format;

        #[test]
        fn numbers_are_digits_only() {
            assert_eq!(number(b"536870912"), Some(536_870_912));
            assert_eq!(number(b"max"), None);
            assert_eq!(number(b""), None);
            assert_eq!(number(b"12 "), None);
            assert_eq!(number(b"1:"), None, "the byte after the digits");
            assert_eq!(number(b"99999999999999999999999"), None);
        }

        #[test]
        fn paths_take_up_to_1023_bytes_and_join_with_a_nul() {
            let mut path = Path::from(b"/sys").unwrap();
            assert!(path.push_component(b"a"));
            assert_eq!(path.bytes(), b"/sys/a");
            assert!(
                !path.push_component(&[b'x'; 1017]),
                "the slash fits, the name does not"
            );
            assert_eq!(path.bytes(), b"/sys/a");
            let mut joined = [0xff; 1024];
            assert!(path.join(b"memory.max", &mut joined));
            assert_eq!(&joined[..17], b"/sys/a/memory.max");
            assert_eq!(joined[17], 0);
            assert!(
                !path.push(&[b'x'; 1018]),
                "1024 bytes leave no room for the NUL"
            );
            assert_eq!(
                path.bytes(),
                b"/sys/a",
                "a path that does not fit is not pushed"
            );
            assert!(path.push(&[b'x'; 1017]));
            assert_eq!(path.bytes().len(), 1023);
            let full = Path::from(&[b'x'; 1012]).unwrap();
            assert!(
                full.join(b"1234567890", &mut joined),
                "1023 bytes and the NUL"
            );
            assert_eq!((joined[1022], joined[1023]), (b'0', 0));
            assert!(!full.join(b"12345678901", &mut joined));
        }

        #[test]
        fn lines_are_found_across_reads_and_long_lines_skipped() {
            let dir = std::env::temp_dir().join(format!("mimalloc-lines-{}", std::process::id()));
            let long = std::string::String::from("y").repeat(5000);
            let text = format!(
                "a\n{long}\nfirst {}\nlast",
                std::string::String::from("z").repeat(4000)
            );
            std::fs::write(&dir, text).unwrap();
            let mut path = dir.to_str().unwrap().as_bytes().to_vec();
            path.push(0);
            let lines = |wanted: u8| {
                find_line(&path, |line| {
                    if line.first() == Some(&wanted) {
                        Some(line.len())
                    } else {
                        None
                    }
                })
            };
            assert_eq!(lines(b'a'), Some(1));
            assert_eq!(
                lines(b'y'),
                None,
                "a line longer than the buffer is skipped"
            );
            assert_eq!(lines(b'f'), Some(4006), "a line that spans two reads");
            assert_eq!(lines(b'l'), Some(4), "the last line without a newline");
            std::fs::write(&dir, "a\n").unwrap();
            let empty = find_line(&path, |line| if line.is_empty() { Some(()) } else { None });
            assert_eq!(
                empty, None,
                "a final newline ends the last line, it starts none"
            );
            std::fs::remove_file(&dir).unwrap();
        }
    }
}
