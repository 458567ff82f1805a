import Foundation
import Strata

/// The project's own mapping-model fixture: a notebook app's model bundle `Notes.xcdatamodeld`
/// with four versions and, beside it, the mapping models of two of its steps, written as Xcode
/// writes them (``XcodeModelWriter``, ``XcodeMappingWriter``).
///
/// - `Notes` (1): Folder (name; notes), Note (title, body, stars; folder, author), Person (name; notes).
/// - `Notes 2` (2), mapped by `Notes-Notes 2`: Note becomes Article — `headline` from
///   `$source.title`, `score` from `$source.stars`, `folderName` from
///   `FUNCTION($source, "valueForKeyPath:", "folder.name")`, `status` the constant `"draft"` — and
///   the relationships are renamed: Folder.articles ↔ Article.inFolder, set only through Folder's
///   `FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:", "NoteToArticle",
///   $source.notes)`; Article.writer ↔ Person.articles, set only through the expression Xcode
///   generates from `$source.author` and `PersonToPerson`.
/// - `Notes 3` (3), inferred: adds Article.pinned (default NO) and Folder.colour.
/// - `Notes 4` (4), mapped by `Notes 3-Notes 4`: Article.status gives way to a Status entity
///   (Article.state ↔ Status.articles); ArticleToArticle names the custom policy class
///   ``statusPolicyClass``.
public enum NotebookMappingFixture {
    /// The custom migration policy class the `Notes 3-Notes 4` mapping names.
    public static let statusPolicyClass = "Notebook.StatusesFromText"

    /// Version 1.
    public static let v1 = XcodeModelVersion(
        "Notes", identifier: "1",
        entities: [
            XcodeEntity(
                "Folder", attributes: [XcodeAttribute("name", "String")],
                relationships: [XcodeRelationship("notes", to: "Note", inverse: "folder", toMany: true)]),
            XcodeEntity(
                "Note",
                attributes: [
                    XcodeAttribute("body", "String", optional: true),
                    XcodeAttribute("stars", "Integer 16", default: "0"),
                    XcodeAttribute("title", "String"),
                ],
                relationships: [
                    XcodeRelationship("author", to: "Person", inverse: "notes"),
                    XcodeRelationship("folder", to: "Folder", inverse: "notes"),
                ]),
            XcodeEntity(
                "Person", attributes: [XcodeAttribute("name", "String")],
                relationships: [XcodeRelationship("notes", to: "Note", inverse: "author", toMany: true)]),
        ])

    /// Version 2 (with `pinned` and `colour`: version 3; with a Status entity: version 4).
    static func later(_ name: String, identifier: String, inferredAdditions: Bool, statuses: Bool)
        -> XcodeModelVersion
    {
        var article = [
            XcodeAttribute("body", "String", optional: true), XcodeAttribute("folderName", "String", optional: true),
            XcodeAttribute("headline", "String"), XcodeAttribute("score", "Integer 16", default: "0"),
        ]
        var folder = [XcodeAttribute("name", "String")]
        if inferredAdditions {
            article.append(XcodeAttribute("pinned", "Boolean", default: "NO"))
            folder.append(XcodeAttribute("colour", "String", optional: true))
        }
        var articleLinks = [
            XcodeRelationship("inFolder", to: "Folder", inverse: "articles"),
            XcodeRelationship("writer", to: "Person", inverse: "articles"),
        ]
        var entities: [XcodeEntity] = []
        if statuses {
            articleLinks.append(XcodeRelationship("state", to: "Status", inverse: "articles"))
            entities.append(
                XcodeEntity(
                    "Status", attributes: [XcodeAttribute("name", "String")],
                    relationships: [XcodeRelationship("articles", to: "Article", inverse: "state", toMany: true)]))
        } else {
            article.append(XcodeAttribute("status", "String", optional: true))
        }
        entities += [
            XcodeEntity("Article", attributes: article, relationships: articleLinks),
            XcodeEntity(
                "Folder", attributes: folder,
                relationships: [XcodeRelationship("articles", to: "Article", inverse: "inFolder", toMany: true)]),
            XcodeEntity(
                "Person", attributes: [XcodeAttribute("name", "String")],
                relationships: [XcodeRelationship("articles", to: "Article", inverse: "writer", toMany: true)]),
        ]
        return XcodeModelVersion(name, identifier: identifier, entities: entities.sorted { $0.name < $1.name })
    }

    /// The four versions, oldest first.
    public static let versions = [
        v1, later("Notes 2", identifier: "2", inferredAdditions: false, statuses: false),
        later("Notes 3", identifier: "3", inferredAdditions: true, statuses: false),
        later("Notes 4", identifier: "4", inferredAdditions: true, statuses: true),
    ]

    /// The `Notes` → `Notes 2` mapping; `headline` is the value expression of the headline (the
    /// unsupported-expression tests give another).
    public static func notesToNotes2(headline: ArchivedExpression = .keyPath("source", "title")) -> XcodeMappingModel {
        XcodeMappingModel(
            bundle: "Notes.xcdatamodeld", from: "Notes", to: "Notes 2",
            entityMappings: [
                XcodeEntityMapping(
                    "Folder", to: "Folder", attributes: [.named("name")],
                    relationships: [
                        .value("articles", .destinationInstances(mapping: "NoteToArticle", sourcePath: "notes"))
                    ]),
                XcodeEntityMapping(
                    "Person", to: "Person", attributes: [.named("name")], relationships: [.named("articles")]),
                XcodeEntityMapping(
                    "Note", to: "Article",
                    attributes: [
                        .named("body"),
                        .value(
                            "folderName",
                            .function(
                                operand: .variable("source"), selector: "valueForKeyPath:",
                                arguments: [.keyPathSpecifier("folder.name")])),
                        .value("headline", headline), .value("score", .keyPath("source", "stars")),
                        .value("status", .constant(.string("draft"))),
                    ],
                    relationships: [
                        .named("inFolder"), .objects("writer", keyPath: "$source.author", mapping: "PersonToPerson"),
                    ]),
            ])
    }

    /// The `Notes 3` → `Notes 4` mapping, whose ArticleToArticle names ``statusPolicyClass``.
    public static let notes3ToNotes4 = XcodeMappingModel(
        bundle: "Notes.xcdatamodeld", from: "Notes 3", to: "Notes 4",
        entityMappings: [
            XcodeEntityMapping(
                "Folder", to: "Folder", attributes: [.named("colour"), .named("name")],
                relationships: [.objects("articles", keyPath: "$source.articles", mapping: "ArticleToArticle")]),
            XcodeEntityMapping(
                "Person", to: "Person", attributes: [.named("name")],
                relationships: [.objects("articles", keyPath: "$source.articles", mapping: "ArticleToArticle")]),
            XcodeEntityMapping(
                "Article", to: "Article", policyClass: statusPolicyClass,
                attributes: ["body", "folderName", "headline", "pinned", "score"].map { .named($0) },
                relationships: [
                    .objects("inFolder", keyPath: "$source.inFolder", mapping: "FolderToFolder"), .named("state"),
                    .objects("writer", keyPath: "$source.writer", mapping: "PersonToPerson"),
                ]),
        ])

    /// Writes the bundle (current version `Notes 4`) into `folder`, with the two mapping models
    /// beside it; returns the bundle's URL.
    @discardableResult
    public static func write(in folder: URL) throws -> URL {
        let bundle = try XcodeModelWriter.writeBundle(
            named: "Notes", versions: versions, current: "Notes 4", in: folder)
        try XcodeMappingWriter.write(notesToNotes2(), named: "Notes-Notes 2", in: folder)
        try XcodeMappingWriter.write(notes3ToNotes4, named: "Notes 3-Notes 4", in: folder)
        return bundle
    }

    /// Writes a store of version 1 with Strata at `url` (configuration `Default`): folders Inbox
    /// and Work, people Ana and Ben, and four notes.
    public static func seedVersion1(at url: URL, bundle: URL) throws {
        let model = try ObjectModel.load(contentsOf: bundle.appendingPathComponent("Notes.xcdatamodel"))
        let store = try SQLiteStore(model: model, configuration: nil, url: url)
        defer { store.close() }
        try seedVersion1(into: store)
    }

    /// Writes the objects of ``seedVersion1(at:bundle:)`` into `store`, opened with version 1.
    public static func seedVersion1(into store: any PersistentStore) throws {
        let folders = try store.newObjectIDs(entity: "Folder", count: 2)
        let people = try store.newObjectIDs(entity: "Person", count: 2)
        let notes = try store.newObjectIDs(entity: "Note", count: 4)
        var rows = [
            StoreRow(id: folders[0], attributes: ["name": .string("Inbox")]),
            StoreRow(id: folders[1], attributes: ["name": .string("Work")]),
            StoreRow(id: people[0], attributes: ["name": .string("Ana")]),
            StoreRow(id: people[1], attributes: ["name": .string("Ben")]),
        ]
        let content: [(String, String?, Int64, Int?, Int?)] = [
            ("Buy milk", "2 litres", 3, 0, 0), ("Ship release", nil, 5, 1, 1), ("Call Ana", "after 6", 0, 0, 1),
            ("Loose thought", nil, 1, nil, nil),
        ]
        for (index, (title, body, stars, folder, author)) in content.enumerated() {
            rows.append(
                StoreRow(
                    id: notes[index],
                    attributes: [
                        "title": .string(title), "body": body.map { .string($0) } ?? .null, "stars": .integer(stars),
                    ],
                    toOne: ["folder": folder.map { folders[$0] }, "author": author.map { people[$0] }]))
        }
        try store.save(StoreChanges(inserts: rows))
    }

    /// The articles a migrated version 1 store holds: headline|body|score|status|folderName|
    /// folder (through Article.inFolder)|writer (through Article.writer), by headline.
    public static let migratedArticles = [
        "Buy milk|2 litres|3|draft|Inbox|Inbox|Ana", "Call Ana|after 6|0|draft|Inbox|Inbox|Ben",
        "Loose thought|nil|1|draft|nil|nil|nil", "Ship release|nil|5|draft|Work|Work|Ben",
    ]

    /// ``articlesQuery`` in a PostgreSQL store's schema, whose text columns hold UTF-8 bytes.
    public static let postgreSQLArticlesQuery = """
        SELECT \(text(#"a."headline""#)), \(text(#"a."body""#)), a."score", \(text(#"a."status""#)), \
        \(text(#"a."folderName""#)), \(text(#"f."name""#)), \(text(#"p."name""#)) FROM "Article" a \
        LEFT JOIN "Folder" f ON f."_pk" = a."inFolder" LEFT JOIN "Person" p ON p."_pk" = a."writer" ORDER BY 1
        """

    /// A PostgreSQL text column (kept as bytes) as text, `nil` for NULL.
    public static func text(_ column: String) -> String { "COALESCE(convert_from(\(column), 'UTF8'), 'nil')" }

    /// The query that lists the articles as ``migratedArticles`` has them.
    public static let articlesQuery = """
        SELECT a."headline", a."body", a."score", a."status", a."folderName", f."name", p."name" FROM "Article" a \
        LEFT JOIN "Folder" f ON f."_pk" = a."inFolder" LEFT JOIN "Person" p ON p."_pk" = a."writer" ORDER BY 1
        """
}
