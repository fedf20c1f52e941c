// The global allocator of this build. In the shared source tree this file is empty (the
// system allocator, glibc's malloc); `run.py --build` writes a generated alloc.rs into
// each allocator's build project instead.
