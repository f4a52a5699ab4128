import CQREncode

/// A QR code (libqrencode), drawn with half-block characters: one character cell holds two
/// rows of modules, so the code is about as tall as it is wide on a terminal.
struct QRCode {
    /// Modules around the code that scanners need to find it (ISO/IEC 18004 asks for 4; 2 is
    /// what terminal tools draw and phones read, and it saves four lines).
    static let quietZone = 2

    /// Whether each module is dark, row by row.
    let modules: [[Bool]]

    /// Encodes `text` as 8-bit data at the lowest error correction (the smallest code); nil
    /// when libqrencode cannot (the text is too long for any QR code).
    init?(_ text: String) {
        guard let code = QRcode_encodeString8bit(text, 0, QR_ECLEVEL_L) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        // libqrencode's `data` holds width * width bytes; bit 0 of each is "dark".
        let data = UnsafeBufferPointer(start: code.pointee.data, count: width * width)
        modules = (0..<width).map { row in (0..<width).map { column in data[row * width + column] & 1 == 1 } }
    }

    /// Makes a code of known modules (for drawing tests).
    init(modules: [[Bool]]) {
        self.modules = modules
    }

    /// Columns the drawing takes.
    var columns: Int { modules.count + 2 * Self.quietZone }

    /// Lines the drawing takes.
    var lines: Int { (columns + 1) / 2 }

    /// The code as lines of ▀, ▄, █ and spaces. The light modules and the quiet zone are the
    /// ones drawn, as `qrencode -t UTF8` does: on the usual light-on-dark terminal that gives
    /// dark modules on a light ground, which is what every scanner reads.
    func halfBlocks() -> [String] {
        let size = columns
        func light(_ row: Int, _ column: Int) -> Bool {
            let (r, c) = (row - Self.quietZone, column - Self.quietZone)
            guard r >= 0, c >= 0, r < modules.count, c < modules.count else { return true }
            return !modules[r][c]
        }
        return stride(from: 0, to: size, by: 2).map { row in
            String(
                (0..<size).map { column -> Character in
                    let top = light(row, column)
                    // An odd size leaves the last line's lower half outside the drawing.
                    let bottom = row + 1 < size && light(row + 1, column)
                    switch (top, bottom) {
                    case (true, true): return "█"
                    case (true, false): return "▀"
                    case (false, true): return "▄"
                    case (false, false): return " "
                    }
                }
            )
        }
    }
}
