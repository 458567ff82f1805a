import Strata

extension OpenAPIBuilder {
    /// `GET /_export`: every object in one Core Data store file (see ``RESTService``'s
    /// `exportSnapshot`).
    mutating func exportPaths() -> [(key: String, value: OpenAPINode)] {
        let operation = OpenAPINode.members([
            ("operationId", .string(operationID("get", "Export"))),
            ("summary", "Every object, as a Core Data store file"),
            ("description", .string(Self.exportDescription)),
            ("tags", ["System"]),
            (
                "responses",
                responses([
                    (
                        "200",
                        [
                            "description": .string(
                                "The store: one SQLite file (rollback journal, no `-wal`) in Core Data's format for "
                                    + "the model's current version, with every object the caller may read."),
                            "headers": [
                                "Content-Length": [
                                    "description": "The file's size in bytes.",
                                    "schema": ["type": "integer", "format": "int64", "minimum": 0],
                                ],
                                "Content-Disposition": [
                                    "description": "`attachment; filename=\"<model name>.sqlite\"`.",
                                    "schema": ["type": "string"],
                                ],
                            ],
                            "content": [
                                RESTService.sqliteMediaType: ["schema": ["type": "string", "format": "binary"]]
                            ],
                        ]
                    ),
                    ("400", nil), ("503", nil),
                ])
            ),
        ])
        return [("/_export", ["get": operation])]
    }

    /// What `GET /_export` does.
    static let exportDescription =
        "Every object the caller may read (hidden entities are left out: their tables are empty and "
        + "relationships to them are left empty), in one SQLite file as Apple's Core Data writes it for the "
        + "model's current version: a store an app opens as it is, to start from instead of thousands of "
        + "requests. The file is read from one snapshot across every store (a save across stores is in it "
        + "whole or not at all). Saves go on while the file is built; the response starts when it is complete."

    /// What the description of `GET /_export` adds on a server that records history.
    static let exportHistoryDescription =
        " Its `Strata-History-Token` names exactly the history the file holds: `/_changes?since=` that token "
        + "gives exactly the changes committed after it, so the file and the feed from there make a complete replica."

    /// `item` (the path item of `/_export`) with its description naming the history token.
    static func withExportHistory(_ item: OpenAPINode) -> OpenAPINode {
        guard let operation = item["get"], case .string(let text)? = operation["description"] else { return item }
        return item.setting("get", operation.setting("description", .string(text + exportHistoryDescription)))
    }
}
