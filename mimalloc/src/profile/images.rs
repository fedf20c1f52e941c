//! The files the process has loaded, as the loader placed them: for each segment, its address
//! range and the file offset it was mapped from, and each file's GNU build id. A snapshot's
//! `Mapping`s get their file offsets and build ids from here (see `complete.rs`).
//!
//! Read from the loader (`dl_iterate_phdr`), not from the files on disk: a file rebuilt since
//! it was loaded must not lend the profile its new build id. Linux and Android only: there
//! mimalloc lists one mapping per line of `/proc/self/maps`, whose file offsets it leaves out.
//! Elsewhere mimalloc lists each image from its base, where file offset 0 is already right,
//! and this module finds nothing to add.

use std::vec::Vec;

/// Where a loaded image's segment lies, and which bytes of its file are mapped there.
#[derive(Debug, Clone, Copy)]
struct Segment {
    /// The start of the segment's first page: the loader maps whole pages, so the mapping
    /// that holds the segment can start before it.
    first_page: u64,
    /// Where the segment itself starts, and where its file bytes begin.
    address: u64,
    file_offset: u64,
    end: u64,
    /// Index into `Images::build_ids`.
    image: usize,
}

/// The loaded images of the process at one moment.
#[derive(Debug, Default)]
pub(super) struct Images {
    segments: Vec<Segment>,
    build_ids: Vec<Option<Vec<u8>>>,
}

/// A mapping's start, moved to where its segment starts if the mapping starts in the page
/// before it, and the file offset of that start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Placement<'a> {
    pub start: u64,
    pub file_offset: u64,
    pub build_id: Option<&'a [u8]>,
}

impl Images {
    /// The images loaded now.
    pub(super) fn loaded() -> Images {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            let mut images = Images::default();
            loader::add_loaded(&mut images);
            images
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        Images::default()
    }

    /// Where a mapping that starts at `address` lies in its file, if it is a loaded segment.
    ///
    /// pprof's readers take a mapping's start to hold the byte at its file offset. When a
    /// segment does not start on a page boundary, its first page begins with bytes of the
    /// file that are not the segment's, so the mapping's start is moved to the segment's: Go's own `pprof` then finds the load address as the
    /// mapping's start less the code segment's address, which it reads from the file.
    pub(super) fn place(&self, address: u64) -> Option<Placement<'_>> {
        let segment = self
            .segments
            .iter()
            .find(|s| s.first_page <= address && address < s.end)?;
        let start = address.max(segment.address);
        Some(Placement {
            start,
            file_offset: segment.file_offset + (start - segment.address),
            build_id: self.build_ids[segment.image].as_deref(),
        })
    }

    /// Adds an image from what its program headers say. `load` holds each `PT_LOAD` segment's
    /// (address, file offset, size in memory), already relocated.
    #[cfg_attr(
        not(any(target_os = "linux", target_os = "android", test)),
        allow(dead_code)
    )]
    pub(super) fn add(&mut self, load: &[(u64, u64, u64)], build_id: Option<Vec<u8>>, page: u64) {
        let image = self.build_ids.len();
        self.build_ids.push(build_id);
        for &(address, file_offset, size) in load {
            self.segments.push(Segment {
                first_page: address & !(page - 1),
                address,
                file_offset,
                end: address.saturating_add(size),
                image,
            });
        }
    }
}

/// The GNU build id in a run of ELF notes (`PT_NOTE`), whose entries are aligned to `align`.
#[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
fn gnu_build_id(mut notes: &[u8], align: usize) -> Option<&[u8]> {
    const NT_GNU_BUILD_ID: u32 = 3;
    let word = |bytes: &[u8], at: usize| -> Option<usize> {
        let b = bytes.get(at..at + 4)?;
        Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let round = |n: usize| n.checked_add(align - 1).map(|n| n & !(align - 1));
    while notes.len() >= 12 {
        let (name_len, desc_len, kind) = (word(notes, 0)?, word(notes, 4)?, word(notes, 8)?);
        let name_end = 12usize.checked_add(name_len)?;
        let desc_start = round(name_end)?;
        let desc_end = desc_start.checked_add(desc_len)?;
        let name = notes.get(12..name_end)?;
        let desc = notes.get(desc_start..desc_end)?;
        if kind == NT_GNU_BUILD_ID as usize && name == b"GNU\0" {
            return Some(desc);
        }
        notes = notes.get(round(desc_end)?..)?;
    }
    None
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod loader {
    use super::{gnu_build_id, Images};
    use core::ffi::c_void;
    use libc::dl_phdr_info;
    use std::os::raw::c_int;
    use std::vec::Vec;

    #[cfg(target_pointer_width = "64")]
    type Header = libc::Elf64_Phdr;
    #[cfg(target_pointer_width = "32")]
    type Header = libc::Elf32_Phdr;

    pub(super) fn add_loaded(images: &mut Images) {
        // SAFETY: `add_image` is called only during this call, with `images` as its data,
        // which outlives it and is not touched meanwhile.
        unsafe { libc::dl_iterate_phdr(Some(add_image), (images as *mut Images).cast()) };
    }

    /// `dl_iterate_phdr`'s callback: adds one image. It must not unwind into C, and nothing in
    /// it panics (a failing allocation aborts).
    ///
    /// # Safety
    ///
    /// Called by `dl_iterate_phdr` only, during `add_loaded`: `info` is the loader's record of
    /// a loaded image, and `data` the `&mut Images` that `add_loaded` passed, used by nothing
    /// else meanwhile.
    unsafe extern "C" fn add_image(info: *mut dl_phdr_info, _: usize, data: *mut c_void) -> c_int {
        // SAFETY: `data` is the `&mut Images` of `add_loaded`, borrowed for this call only;
        // `info` points to the loader's record of one image, valid during the callback.
        let (images, info) = unsafe { (&mut *data.cast::<Images>(), &*info) };
        let headers: &[Header] = if info.dlpi_phdr.is_null() {
            &[]
        } else {
            // SAFETY: the loader's record holds `dlpi_phnum` program headers at `dlpi_phdr`,
            // mapped for the life of the image, which the callback runs within.
            unsafe { core::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
        };
        let base = wide(info.dlpi_addr);
        let load: Vec<(u64, u64, u64)> = headers
            .iter()
            .filter(|h| h.p_type == libc::PT_LOAD)
            .map(|h| {
                let address = base.wrapping_add(wide(h.p_vaddr));
                (address, wide(h.p_offset), wide(h.p_memsz))
            })
            .collect();
        let build_id = headers
            .iter()
            .filter(|h| h.p_type == libc::PT_NOTE)
            .find_map(|h| notes_build_id(headers, base, h))
            .map(<[u8]>::to_vec);
        images.add(&load, build_id, page_size());
        0
    }

    /// The build id in the notes of `note`, read from memory where the loader put them: only
    /// when a `PT_LOAD` segment holds them whole (the loader maps nothing else).
    fn notes_build_id<'a>(headers: &[Header], base: u64, note: &Header) -> Option<&'a [u8]> {
        let (start, len) = (wide(note.p_vaddr), wide(note.p_filesz));
        let mapped = headers.iter().any(|h| {
            let segment_end = wide(h.p_vaddr).saturating_add(wide(h.p_filesz));
            h.p_type == libc::PT_LOAD
                && wide(h.p_vaddr) <= start
                && start
                    .checked_add(len)
                    .map_or(false, |end| end <= segment_end)
        });
        if !mapped {
            return None;
        }
        let address = usize::try_from(base.wrapping_add(start)).ok()?;
        // SAFETY: the notes lie inside a loaded segment's file bytes (checked above), which
        // stay mapped and unchanged while the image is loaded: during this callback at least.
        let notes = unsafe { core::slice::from_raw_parts(address as *const u8, len as usize) };
        let align = if wide(note.p_align) == 8 { 8 } else { 4 };
        gnu_build_id(notes, align)
    }

    /// An ELF field as `u64`: the headers' fields are `u32` in 32-bit processes.
    fn wide(field: impl Into<u64>) -> u64 {
        field.into()
    }

    fn page_size() -> u64 {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        u64::try_from(page)
            .ok()
            .filter(|p| p.is_power_of_two())
            .unwrap_or(4096)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// A program header of `kind` for `len` bytes at `address` (the image's base is 0).
        fn header(kind: u32, address: usize, len: usize, align: usize) -> Header {
            Header {
                p_type: kind,
                p_flags: 0,
                p_offset: 0,
                p_vaddr: address as _,
                p_paddr: address as _,
                p_filesz: len as _,
                p_memsz: len as _,
                p_align: align as _,
            }
        }

        fn found(headers: &[Header]) -> Option<std::vec::Vec<u8>> {
            let note = headers.iter().find(|h| h.p_type == libc::PT_NOTE).unwrap();
            notes_build_id(headers, 0, note).map(<[u8]>::to_vec)
        }

        #[test]
        fn notes_are_read_only_inside_a_loaded_segment() {
            let notes = super::super::tests::note(b"GNU\0", 3, &[7; 20]);
            let (at, len) = (notes.as_ptr() as usize, notes.len());
            let note = header(libc::PT_NOTE, at, len, 4);
            let inside = header(libc::PT_LOAD, at - 16, len + 32, 4096);
            assert_eq!(found(&[inside, note]), Some(std::vec![7; 20]));
            let exact = header(libc::PT_LOAD, at, len, 4096);
            assert_eq!(found(&[note, exact]), Some(std::vec![7; 20]));
            // Not loaded: the note's own header, or a segment the loader does not map, covers it.
            assert_eq!(found(&[note]), None);
            let other = header(libc::PT_DYNAMIC, at, len, 8);
            assert_eq!(found(&[other, note]), None);
            // A segment that starts after the notes or ends before their end.
            let after = header(libc::PT_LOAD, at + 1, len + 32, 4096);
            assert_eq!(found(&[after, note]), None);
            let short = header(libc::PT_LOAD, at - 16, len + 15, 4096);
            assert_eq!(found(&[short, note]), None);
        }

        #[test]
        fn eight_byte_aligned_notes_are_walked_in_eights() {
            // A first note whose description ends 4 bytes into an 8-byte unit: the next one
            // starts 4 bytes later than it would in a run of notes aligned to 4.
            let mut notes = super::super::tests::note(b"GNU\0", 5, &[1; 4]);
            notes.extend_from_slice(&[0; 4]);
            notes.extend(super::super::tests::note(b"GNU\0", 3, &[9; 20]));
            let (at, len) = (notes.as_ptr() as usize, notes.len());
            let load = header(libc::PT_LOAD, at, len, 4096);
            let note = header(libc::PT_NOTE, at, len, 8);
            assert_eq!(found(&[load, note]), Some(std::vec![9; 20]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for word in [name.len() as u32, desc.len() as u32, kind] {
            out.extend_from_slice(&word.to_ne_bytes());
        }
        out.extend_from_slice(name);
        out.resize((out.len() + 3) & !3, 0);
        out.extend_from_slice(desc);
        out.resize((out.len() + 3) & !3, 0);
        out
    }

    #[test]
    fn the_build_id_note_is_found_after_others() {
        let mut notes = note(b"GNU\0", 5, &[1, 2, 3, 4, 5, 6, 7, 8]);
        notes.extend(note(b"GNU\0", 3, &[0xab; 20]));
        assert_eq!(gnu_build_id(&notes, 4), Some(&[0xab; 20][..]));
        assert_eq!(gnu_build_id(&notes[..notes.len() - 4], 4), None, "cut off");
        assert_eq!(
            gnu_build_id(&note(b"Go\0\0", 3, &[1; 8]), 4),
            None,
            "not GNU's"
        );
    }

    #[test]
    fn a_mapping_is_placed_from_its_segments_start() {
        let mut images = Images::default();
        // lld's layout: the code's address is a page past its file offset, and not page-aligned.
        let text = 0x7f00_0001_f600;
        images.add(
            &[(0x7f00_0000_0000, 0, 0x1e5f4), (text, 0x1e600, 0x5ba90)],
            None,
            4096,
        );
        let first_page = images.place(0x7f00_0001_f000).unwrap();
        assert_eq!((first_page.start, first_page.file_offset), (text, 0x1e600));
        let split = images.place(text + 0x2a00).unwrap();
        assert_eq!((split.start, split.file_offset), (text + 0x2a00, 0x21000));
        assert_eq!(images.place(text + 0x5ba90), None);
    }

    #[test]
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn this_executable_is_placed_with_its_build_id() {
        let images = Images::loaded();
        let here = this_executable_is_placed_with_its_build_id as *const () as usize as u64;
        let placement = images.place(here).expect("this function's code is loaded");
        assert_eq!(placement.start, here, "a mapping starting here stays here");
        assert_eq!(placement.file_offset, offset_in_proc_maps(here));
        let id = placement
            .build_id
            .expect("cargo's linkers write a GNU build id");
        assert!(id.len() >= 8, "{id:?}");
    }

    /// The file offset of `address` as the kernel reports it.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn offset_in_proc_maps(address: u64) -> u64 {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        for line in maps.lines() {
            let mut words = line.split_whitespace();
            let range = words.next().unwrap();
            let offset = words.nth(1).unwrap();
            let (start, end) = range.split_once('-').unwrap();
            let start = u64::from_str_radix(start, 16).unwrap();
            if (start..u64::from_str_radix(end, 16).unwrap()).contains(&address) {
                return u64::from_str_radix(offset, 16).unwrap() + (address - start);
            }
        }
        panic!("{address:#x} is in no mapping of /proc/self/maps");
    }
}
