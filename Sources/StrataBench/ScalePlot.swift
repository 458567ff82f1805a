import Foundation

/// The SVG `strata-bench --scale --plot` writes: throughput and p99 latency of GET by id and of
/// a list's first and 1,000th page against the number of stored books (log scale), one panel
/// each.
enum ScalePlot {
    struct Series {
        var name: String
        var color: String
        var values: [Double]
    }

    static func svg(_ points: [ScaleBench.Point]) -> String {
        let sizes = points.map { Double($0.books) }
        func p99(_ result: Wrk.Result) -> Double { BenchTable.Row.milliseconds(result.p99) ?? 0 }
        let names = ["GET /books/{id}", "list, page 1", "list, page 1,000 (cursor)"]
        let colors = ["#2f6fdf", "#2a9d4b", "#d9822b"]
        let throughput = zip(names, colors).enumerated().map { index, pair in
            Series(
                name: pair.0, color: pair.1,
                values: points.map {
                    [$0.getByID, $0.firstPage, $0.deepPage][index].requestsPerSecond
                })
        }
        let latency = zip(names, colors).enumerated().map { index, pair in
            Series(
                name: pair.0, color: pair.1, values: points.map { p99([$0.getByID, $0.firstPage, $0.deepPage][index]) })
        }
        let width = 760.0
        let height = 300.0
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="11">
            <style>text { fill: #222 } .axis { stroke: #888 } .grid { stroke: #ddd }
            @media (prefers-color-scheme: dark) { text { fill: #ddd } .grid { stroke: #444 } }</style>

            """
        out += panel(
            "throughput at 64 connections (req/s)", throughput, sizes: sizes, x: 50, y: 30, width: 300, height: 200)
        out += panel("p99 latency (ms)", latency, sizes: sizes, x: 430, y: 30, width: 300, height: 200)
        for (index, series) in throughput.enumerated() {
            let x = 50.0 + Double(index) * 230
            out += "<rect x=\"\(x)\" y=\"272\" width=\"12\" height=\"4\" fill=\"\(series.color)\"/>"
            out += "<text x=\"\(x + 18)\" y=\"278\">\(escape(series.name))</text>\n"
        }
        return out + "</svg>\n"
    }

    /// One panel: axes, grid, a polyline and dots per series, sizes on a log axis.
    private static func panel(
        _ title: String, _ series: [Series], sizes: [Double], x: Double, y: Double, width: Double, height: Double
    ) -> String {
        let top = max(series.flatMap(\.values).max() ?? 1, 1e-9) * 1.1
        let logs = sizes.map { log10(max($0, 1)) }
        let (low, high) = (logs.min() ?? 0, logs.max() ?? 1)
        func px(_ index: Int) -> Double {
            high > low ? x + (logs[index] - low) / (high - low) * width : x + width / 2
        }
        func py(_ value: Double) -> Double { y + height - value / top * height }
        var out = "<text x=\"\(x)\" y=\"\(y - 10)\" font-weight=\"bold\">\(escape(title))</text>\n"
        for step in 0...4 {
            let value = top * Double(step) / 4
            let lineY = py(value)
            out += "<line class=\"grid\" x1=\"\(x)\" y1=\"\(f(lineY))\" x2=\"\(x + width)\" y2=\"\(f(lineY))\"/>"
            out += "<text x=\"\(x - 6)\" y=\"\(f(lineY + 4))\" text-anchor=\"end\">\(label(value))</text>\n"
        }
        out += "<line class=\"axis\" x1=\"\(x)\" y1=\"\(y + height)\" x2=\"\(x + width)\" y2=\"\(y + height)\"/>\n"
        for index in sizes.indices {
            out += "<text x=\"\(f(px(index)))\" y=\"\(y + height + 16)\" text-anchor=\"middle\">"
            out += "\(ScaleBench.sizeLabel(Int(sizes[index]))) books</text>\n"
        }
        for line in series {
            let coordinates = line.values.indices.map { "\(f(px($0))),\(f(py(line.values[$0])))" }
            out += "<polyline fill=\"none\" stroke=\"\(line.color)\" stroke-width=\"2\" "
            out += "points=\"\(coordinates.joined(separator: " "))\"/>\n"
            for index in line.values.indices {
                out += "<circle cx=\"\(f(px(index)))\" cy=\"\(f(py(line.values[index])))\" r=\"3\" "
                out +=
                    "fill=\"\(line.color)\"><title>\(escape(line.name)): \(label(line.values[index]))</title></circle>\n"
            }
        }
        return out
    }

    private static func f(_ value: Double) -> String { String(format: "%.1f", value) }

    private static func label(_ value: Double) -> String {
        if value >= 1_000 { return String(format: "%.0fk", value / 1_000) }
        if value >= 10 { return String(format: "%.0f", value) }
        return String(format: "%.1f", value)
    }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
    }
}
