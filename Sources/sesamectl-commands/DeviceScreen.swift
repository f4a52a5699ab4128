import SesameClient

/// What a device login shows the person: on a terminal the code set apart and a QR code of the
/// complete verification URI when the terminal is large enough; elsewhere two plain lines
/// (where to go and the code, and the complete URI when there is one) that scripts can read.
enum DeviceScreen {
    /// Lines the screen takes besides the QR code: the text above and below it, the live
    /// line, and one spare so the top of the code does not scroll away.
    static let linesBesideCode = 9

    /// Shows `verification` on `terminal`.
    static func show(_ verification: DeviceVerification, provider: String, on terminal: Terminal) {
        let complete = verification.uriComplete ?? verification.uri
        guard terminal.isTerminal else {
            terminal.line("Open \(verification.uri) and enter the code \(verification.userCode)")
            if let complete = verification.uriComplete { terminal.line("  (or open \(complete))") }
            return
        }
        terminal.line("To log in with \(provider), open")
        terminal.line("  \(verification.uri)")
        terminal.line("and enter the code")
        terminal.line("")
        terminal.line("    " + terminal.styled(verification.userCode, "1"))
        terminal.line("")
        guard let code = fittingCode(complete, on: terminal) else {
            if let uriComplete = verification.uriComplete { terminal.line("or open \(uriComplete)") }
            return
        }
        terminal.line(
            verification.uriComplete == nil
                ? "or scan this QR code of the page:" : "or scan this QR code (the page with the code filled in):"
        )
        code.halfBlocks().forEach(terminal.line)
    }

    /// The QR code of `text` when the terminal has room for it beside the text around it.
    private static func fittingCode(_ text: String, on terminal: Terminal) -> QRCode? {
        guard let size = terminal.size, let code = QRCode(text) else { return nil }
        guard code.columns <= size.columns, code.lines + linesBesideCode <= size.lines else { return nil }
        return code
    }
}
