#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The terminal while a live view owns it: the alternate screen, the cursor hidden, keys read one
/// at a time without echo. ``leave()`` puts everything back as it was, whichever way the view
/// ends (`q`, Ctrl-C, a deadline): Ctrl-C still raises SIGINT, which stops the view through its
/// stop flag, so the terminal is restored on that path too.
package final class TerminalScreen: Sendable {
    /// The terminal's settings before, when standard input is the terminal.
    private let saved: Mutex<termios?>

    private init(saved: termios?) {
        self.saved = Mutex(saved)
    }

    /// Takes the terminal over, or `nil` when standard output is not one.
    package static func enter() -> TerminalScreen? {
        guard isatty(STDOUT_FILENO) == 1 else { return nil }
        var saved: termios?
        if isatty(STDIN_FILENO) == 1 {
            var settings = termios()
            if tcgetattr(STDIN_FILENO, &settings) == 0 {
                saved = settings
                // Keys as they are typed, unechoed; reads never wait. Signals (Ctrl-C) still work.
                settings.c_lflag &= ~tcflag_t(ICANON | ECHO)
                withUnsafeMutableBytes(of: &settings.c_cc) { bytes in
                    bytes[Int(VMIN)] = 0
                    bytes[Int(VTIME)] = 0
                }
                tcsetattr(STDIN_FILENO, TCSANOW, &settings)
            }
        }
        write("\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J")
        return TerminalScreen(saved: saved)
    }

    /// Gives the terminal back: the screen and cursor as they were, the settings restored.
    package func leave() {
        write("\u{1B}[?25h\u{1B}[?1049l")
        saved.withLock { saved in
            guard var settings = saved else { return }
            tcsetattr(STDIN_FILENO, TCSANOW, &settings)
            saved = nil
        }
    }

    /// The terminal's size now (it follows a resize).
    package var size: (rows: Int, columns: Int) {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0, size.ws_col > 0 else { return (24, 80) }
        return (Int(size.ws_row), Int(size.ws_col))
    }

    /// Whether `q` was typed since the last call (other keys are ignored).
    package func quitRequested() -> Bool {
        guard saved.withLock({ $0 != nil }) else { return false }
        var quit = false
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let count = read(STDIN_FILENO, &buffer, buffer.count)
            guard count > 0 else { break }
            if buffer[..<count].contains(where: { $0 == UInt8(ascii: "q") || $0 == UInt8(ascii: "Q") }) { quit = true }
        }
        return quit
    }

    /// Draws `lines` from the top left, each cut to the width, as many as fit; what was below is
    /// cleared. Drawn over the last screen rather than after clearing it, so it does not flicker.
    package func draw(_ lines: [String]) {
        let (rows, columns) = size
        var screen = "\u{1B}[H"
        for (index, line) in lines.prefix(rows).enumerated() {
            if index > 0 { screen += "\r\n" }
            screen += String(line.prefix(columns)) + "\u{1B}[K"
        }
        screen += "\u{1B}[J"
        Self.write(screen)
    }

    private static func write(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(STDOUT_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                guard written > 0 else { return }
                offset += written
            }
        }
    }

    private func write(_ text: String) { Self.write(text) }
}
