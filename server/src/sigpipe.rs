//! SIGPIPE blocked on the server's threads.
//!
//! A write to a connection the client has already closed raises SIGPIPE
//! in the writing thread unless the write says `MSG_NOSIGNAL`, and the
//! vectored writes under hyper and rustls (`writev`) cannot say it. A Rust
//! binary, CPython and Node ignore SIGPIPE for their whole process, so
//! there the write just fails with `EPIPE`; a C host (`tj_queue_serve`)
//! usually keeps the default disposition, which kills the process. Rather
//! than change a disposition that belongs to the host, every thread of the
//! server blocks the signal for itself: a write then fails with `EPIPE`
//! (the connection ends, as it would anyway) and the signal stays pending
//! on that thread, discarded when the thread exits. Threads the server's
//! threads start inherit the mask.

/// Block SIGPIPE for the calling thread (a no-op off Unix).
pub(crate) fn block_on_this_thread() {
    #[cfg(unix)]
    // SAFETY: `set` is a local sigset_t initialised by sigemptyset before
    // use; pthread_sigmask only changes the calling thread's mask and
    // accepts a NULL old-set pointer.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}
