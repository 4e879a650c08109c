//! Readiness notifications to a service manager: the `sd_notify` protocol
//! of systemd's `Type=notify` services.
//!
//! The manager passes an `AF_UNIX` datagram socket in `$NOTIFY_SOCKET`: a
//! path (`/run/systemd/notify`), or an abstract socket name written with a
//! leading `@`. Each datagram is newline-separated `KEY=VALUE` lines:
//! `READY=1` once the service serves, `STOPPING=1` when it begins to stop,
//! `STATUS=...` for `systemctl status`. The protocol is this small, and the
//! `sd-notify` crate treats an `@` name as a file path (systemd's own
//! sockets are paths, but other managers and tests use abstract ones), so
//! it is implemented here over std's `UnixDatagram`.

use std::ffi::OsStr;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};

/// The environment variable that names the service manager's socket.
pub const NOTIFY_SOCKET: &str = "NOTIFY_SOCKET";

/// Sends `state` (`KEY=VALUE` lines) to the service manager named by
/// `$NOTIFY_SOCKET`. Returns `Ok(false)` when there is none (the daemon
/// was not started by one), `Ok(true)` once the datagram is sent.
pub fn notify(state: &str) -> io::Result<bool> {
    match std::env::var_os(NOTIFY_SOCKET) {
        Some(socket) if !socket.is_empty() => notify_to(&socket, state).map(|()| true),
        _ => Ok(false),
    }
}

/// Sends `state` as one datagram to the socket `socket` names: a path, or
/// `@name` for the abstract socket `name`.
pub fn notify_to(socket: &OsStr, state: &str) -> io::Result<()> {
    let address = socket_address(socket)?;
    let sent = UnixDatagram::unbound()?.send_to_addr(state.as_bytes(), &address)?;
    if sent != state.len() {
        // A datagram is all or nothing; a short count means the manager
        // would read half a message.
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            crate::texts::NOTIFICATION_CUT_SHORT,
        ));
    }
    Ok(())
}

/// The address `$NOTIFY_SOCKET` names.
fn socket_address(socket: &OsStr) -> io::Result<SocketAddr> {
    match socket.as_bytes() {
        [b'@', name @ ..] => SocketAddr::from_abstract_name(name),
        [b'/', ..] => SocketAddr::from_pathname(socket),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            crate::texts::not_a_notify_socket(NOTIFY_SOCKET, &socket.to_string_lossy()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn receive(socket: &UnixDatagram) -> String {
        socket
            .set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let mut buffer = [0u8; 512];
        let length = socket.recv(&mut buffer).expect("a datagram");
        String::from_utf8_lossy(&buffer[..length]).into_owned()
    }

    #[test]
    fn sends_one_datagram_to_a_socket_path() {
        let tmp = tempfile::tempdir().expect("tmp");
        let path = tmp.path().join("notify");
        let manager = UnixDatagram::bind(&path).expect("bind");
        notify_to(path.as_os_str(), "READY=1\nSTATUS=serving").expect("sent");
        assert_eq!(receive(&manager), "READY=1\nSTATUS=serving");
    }

    #[test]
    fn an_at_sign_names_an_abstract_socket() {
        let name = format!("xdev-notify-test-{}", std::process::id());
        let address = SocketAddr::from_abstract_name(name.as_bytes()).expect("address");
        let manager = UnixDatagram::bind_addr(&address).expect("bind");
        notify_to(OsStr::new(&format!("@{name}")), "STOPPING=1").expect("sent");
        assert_eq!(receive(&manager), "STOPPING=1");
    }

    #[test]
    fn refuses_what_is_no_socket_address() {
        for socket in ["relative/path", "vsock:2:1234"] {
            let error = notify_to(OsStr::new(socket), "READY=1").expect_err(socket);
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{socket}");
        }
    }

    #[test]
    fn a_missing_socket_is_an_error_not_a_hang() {
        let tmp = tempfile::tempdir().expect("tmp");
        let path = tmp.path().join("nobody-listens");
        assert!(notify_to(path.as_os_str(), "READY=1").is_err());
    }
}
