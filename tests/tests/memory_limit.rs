//! The background purge under a container's memory limit (`mimalloc::policy::memory_limit`,
//! `policy/limit.rs`), in a real memory cgroup: a program that frees a burst, is quiet for a
//! second and then needs as much memory again in another form (here its own `mmap`) outlives a
//! limit that holds one of the two but not both, where without the background purge it is
//! killed at the limit for memory it no longer uses. Making a cgroup takes root and a writable
//! memory controller (cgroup v1's, or v2's at the root of the unified hierarchy); elsewhere the
//! test says it was skipped and why.

use mimalloc::MiMalloc;

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

#[test]
#[cfg_attr(
    not(mimalloc_memory_limit),
    ignore = "this build reads no memory limit (mimalloc 3 on Linux and Android does)"
)]
fn child_phase_change_outlives_its_memory_limit() {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    cgroups::phase_change_outlives_its_limit("child_phase_change_outlives_its_memory_limit");
}

/// The limit is read when the background purge's thread starts, not before, and again by a
/// child after `fork`; a process below half its limit never purges at once.
#[test]
#[cfg_attr(
    not(mimalloc_memory_limit),
    ignore = "this build reads no memory limit (mimalloc 3 on Linux and Android does)"
)]
fn child_limit_is_read_when_the_thread_starts() {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    cgroups::limit_is_read_when_the_thread_starts("child_limit_is_read_when_the_thread_starts");
}

/// The tests' bodies: cgroups, `mmap` and `fork` are Linux's (the tests are ignored elsewhere).
#[cfg(any(target_os = "linux", target_os = "android"))]
mod cgroups {
    use mimalloc::policy::{self, MemoryLimit};
    use mimalloc_tests::fork::in_a_fork;
    use mimalloc_tests::{
        assert_child_ran_the_test, child_command, is_child, keep, policy_lines, skip,
    };
    use std::path::{Path, PathBuf};
    use std::process::Output;
    use std::time::{Duration, Instant};

    const MIB: usize = 1 << 20;
    /// The limit: one phase (a burst of 300 MiB of small blocks, about 340 MiB resident with
    /// mimalloc's pages) fits, both at once do not.
    const LIMIT: usize = 480 * MIB;
    const PHASE: usize = 300 * MIB;

    /// A memory cgroup of this test's own, with a limit, removed when dropped.
    struct Cgroup {
        dir: PathBuf,
        version: u8,
    }

    impl Cgroup {
        /// Makes one under cgroup v1's memory hierarchy, or else at the root of v2's where it has
        /// the memory controller; the reason where neither can be made.
        fn new(name: &str, limit: usize) -> Result<Cgroup, String> {
            // SAFETY: `geteuid` has no precondition.
            if unsafe { libc::geteuid() } != 0 {
                return Err("making a memory cgroup takes root".into());
            }
            let v1 = Path::new("/sys/fs/cgroup/memory");
            let v2 = Path::new("/sys/fs/cgroup");
            let (parent, version) = if v1.join("memory.limit_in_bytes").exists() {
                (v1, 1)
            } else if std::fs::read_to_string(v2.join("cgroup.controllers"))
                .map_or(false, |c| c.split_whitespace().any(|c| c == "memory"))
            {
                (v2, 2)
            } else {
                return Err("no memory cgroup controller to make a cgroup with".into());
            };
            let dir = parent.join(format!("{name}-{}", std::process::id()));
            std::fs::create_dir(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
            let cgroup = Cgroup { dir, version };
            // Swap would let the limit be passed slowly instead of enforced (the hosted runners
            // have swap; where the kernel accounts no swap, the file is missing).
            let files: &[&str] = if version == 1 {
                &["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"]
            } else {
                &["memory.max", "memory.swap.max"]
            };
            for (i, file) in files.iter().enumerate() {
                let value = if version == 2 && i == 1 { 0 } else { limit };
                let path = cgroup.dir.join(file);
                if i == 0 || path.exists() {
                    std::fs::write(&path, value.to_string())
                        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                }
            }
            Ok(cgroup)
        }

        /// Runs `test` of this binary as a child inside the cgroup, with `env`.
        fn run(&self, test: &str, env: &[(&str, &str)]) -> Output {
            let child = child_command(test, env);
            // The shell moves itself into the cgroup, then becomes the child.
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg("echo $$ > \"$0/cgroup.procs\" && exec \"$@\"")
                .arg(&self.dir)
                .arg(child.get_program())
                .args(child.get_args())
                .envs(child.get_envs().filter_map(|(k, v)| Some((k, v?))))
                .output()
                .expect("sh runs");
            let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
            assert_child_ran_the_test(test, &text(&out.stdout), &text(&out.stderr));
            out
        }
    }

    impl Drop for Cgroup {
        fn drop(&mut self) {
            // Its processes have exited: an empty cgroup is removed as a directory.
            let _ = std::fs::remove_dir(&self.dir);
        }
    }

    /// The child: a burst of small blocks freed, a second of quiet, then as much memory again
    /// mapped and written by the program itself; it prints what the policy read.
    fn phase_change() {
        let mut blocks = Vec::new();
        let mut total = 0;
        while total < PHASE {
            let size = 64 + total % 960;
            blocks.push(vec![size as u8; size].into_boxed_slice());
            total += size;
        }
        drop(keep(blocks));
        std::thread::sleep(Duration::from_secs(1));
        // SAFETY: a private anonymous mapping of our own, written page by page, then unmapped.
        unsafe {
            let prot = libc::PROT_READ | libc::PROT_WRITE;
            let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
            let map = libc::mmap(std::ptr::null_mut(), PHASE, prot, flags, -1, 0);
            assert_ne!(map, libc::MAP_FAILED);
            for page in (0..PHASE).step_by(4096) {
                map.cast::<u8>().add(page).write_volatile(1);
            }
            libc::munmap(map, PHASE);
        }
        println!("limit: {:?}", policy::memory_limit());
    }

    /// The child's policy lines under the limit: what it read, and each crossing of the half once.
    fn said_what_it_did(lines: &[String], version: u8) {
        let read = format!(
            "memory limit {} MiB (cgroup v{}): a look every 100 ms, and freed memory goes back at \
             once past {} MiB resident",
            LIMIT / MIB,
            version,
            LIMIT / 2 / MIB
        );
        assert!(
            lines.iter().any(|l| l.ends_with(&read)),
            "{read:?} in {lines:#?}"
        );
        // Each crossing of the half is said once: past it after the burst, back under after the
        // purge (and the same again for the mapping, which passes it with nothing to purge).
        let crossings: Vec<bool> = lines
            .iter()
            .filter_map(|l| {
                if l.contains("past half the memory limit") {
                    Some(true)
                } else if l.contains("back under half the memory limit") {
                    Some(false)
                } else {
                    None
                }
            })
            .collect();
        assert_eq!(
            crossings.first(),
            Some(&true),
            "a prompt purge in {lines:#?}"
        );
        assert!(
            crossings.windows(2).all(|pair| pair[0] != pair[1]) && crossings.len() <= 6,
            "crossings said once each, alternately: {lines:#?}"
        );
    }

    /// The body of `child_phase_change_outlives_its_memory_limit`.
    pub(super) fn phase_change_outlives_its_limit(test: &str) {
        if is_child() {
            return phase_change();
        }
        // Guarded sampling as dense as the `guarded` lane's (a block in every 4 KiB requested)
        // gives each sampled block a page of its own: the burst alone passes the limit.
        if std::env::var("MIMALLOC_GUARDED_SAMPLE_RATE").map_or(false, |rate| rate != "0") {
            return skip(
                test,
                "MIMALLOC_GUARDED_SAMPLE_RATE is set: the burst would not fit the limit",
            );
        }
        let cgroup = match Cgroup::new("mimalloc-limit", LIMIT) {
            Ok(cgroup) => cgroup,
            Err(why) => return skip(test, &why),
        };
        // The limit holds one phase and not both: the program is killed when mimalloc keeps what
        // it freed.
        let kept = cgroup.run(test, &[("MIMALLOC_BACKGROUND_PURGE", "0")]);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            kept.status.signal(),
            Some(libc::SIGKILL),
            "without the background purge the limit must kill the child ({}); stderr:\n{}",
            kept.status,
            String::from_utf8_lossy(&kept.stderr)
        );
        let out = cgroup.run(test, &[("MIMALLOC_VERBOSE", "1")]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let lines = policy_lines(&out.stderr);
        assert!(
            out.status.success(),
            "the child must outlive the limit ({}); its policy lines: {lines:#?}",
            out.status
        );
        said_what_it_did(&lines, cgroup.version);
        let expected = format!(
            "limit: Limited {{ bytes: {LIMIT}, cgroup: {}, purge_from: {}, prompt_purges: ",
            cgroup.version,
            LIMIT / 2
        );
        assert!(stdout.contains(&expected), "{expected:?} in {stdout}");
    }

    /// The body of `child_limit_is_read_when_the_thread_starts`.
    pub(super) fn limit_is_read_when_the_thread_starts(test: &str) {
        const ROOMY: usize = 2048 * MIB;
        if is_child() {
            return read_when_the_thread_starts();
        }
        let cgroup = match Cgroup::new("mimalloc-roomy", ROOMY) {
            Ok(cgroup) => cgroup,
            Err(why) => {
                skip(
                    test,
                    &format!("{why}: the limit read is the process's own cgroup's"),
                );
                mimalloc_tests::in_child(test, &[]);
                return;
            }
        };
        let out = cgroup.run(test, &[]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        let expected = format!(
            "read: Limited {{ bytes: {ROOMY}, cgroup: {}, purge_from: {}, prompt_purges: 0 }}",
            cgroup.version,
            ROOMY / 2
        );
        assert!(stdout.contains(&expected), "{expected:?} in {stdout}");
    }

    fn read_when_the_thread_starts() {
        assert_eq!(policy::memory_limit(), MemoryLimit::Unread);
        let heap = keep(vec![1u8; policy::PURGE_FROM + 4 * MIB]);
        let more = keep(vec![1u8; 2 * MIB]);
        let deadline = Instant::now() + Duration::from_secs(5);
        while policy::memory_limit() == MemoryLimit::Unread {
            assert!(Instant::now() < deadline, "the thread read no limit in 5 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        // Three of the thread's looks under a limit, all below half of it.
        std::thread::sleep(Duration::from_millis(350));
        drop((heap, more));
        // SAFETY: the child only reads the policy's state, which needs no lock.
        let forked = unsafe { in_a_fork(|| policy::memory_limit() == MemoryLimit::Unread) };
        assert_eq!(forked, Ok(()), "a forked child reads the limit again");
        println!("read: {:?}", policy::memory_limit());
    }
}
