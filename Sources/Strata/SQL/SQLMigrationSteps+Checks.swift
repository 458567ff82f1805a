import Foundation

/// Checking a step's data before it writes anything (see ``MigrationCheck``), and the temporary
/// tables of (owner, member) pairs from which to-many relationships become to-one.
extension SQLMigrationSteps {
    /// Runs `step`'s checks on its old tables, named as `oldSchema` names them (the step has not
    /// moved any yet). When every check holds, creates and fills the temporary members tables
    /// the step's copy reads.
    /// - Returns: what the data holds that the new model cannot, or nil when the step can run.
    func check(_ step: MigrationStep, oldSchema: SQLiteSchema) throws(Connection.Failure) -> MigrationCheck.Failure? {
        let refusals = try refusals(of: step, oldSchema: oldSchema)
        guard refusals.isEmpty else {
            return MigrationCheck.Failure(
                message: "the store cannot be migrated to the model; its data does not fit the new model: "
                    + refusals.map(\.description).joined(separator: "; "))
        }
        for check in step.checks {
            guard let members = check.members, let pairs = pairs(of: check, step: step, oldSchema: oldSchema)
            else { continue }
            let table = dialect.quote(
                MigrationCheck.membersTable(entity: members.entity, relationship: members.relationship))
            try connection.run(dialect.createMembersTable(table), [])
            try connection.run(
                "INSERT INTO \(table) (\"owner\", \"member\") SELECT \"owner\", \"member\" FROM (\(pairs)) AS \"pairs\"",
                [])
        }
        for links in step.links(oldSchema: oldSchema) {
            // No old table to read (a destination outside the store): no links.
            let pairs =
                pairs(of: links.relationship, in: links.entity, step: step, oldSchema: oldSchema)
                ?? "SELECT CAST(NULL AS BIGINT) AS \"owner\", CAST(NULL AS BIGINT) AS \"member\" WHERE 1 = 0"
            try connection.run(
                "CREATE TEMP TABLE \(dialect.quote(SQLJoinSource.linksTable(links.join))) AS SELECT \"owner\", \"member\" FROM (\(pairs)) AS \"pairs\"",
                [])
        }
        return nil
    }

    /// Drops the temporary members and links tables `check` made for `step`.
    func dropMembersTables(_ step: MigrationStep, oldSchema: SQLiteSchema) throws(Connection.Failure) {
        for check in step.checks {
            guard let members = check.members else { continue }
            let table = dialect.quote(
                MigrationCheck.membersTable(entity: members.entity, relationship: members.relationship))
            try connection.run("DROP TABLE IF EXISTS \(table)", [])
        }
        for links in step.links(oldSchema: oldSchema) {
            try connection.run("DROP TABLE IF EXISTS \(dialect.quote(SQLJoinSource.linksTable(links.join)))", [])
        }
    }

    /// Clears the links of relationships whose destination changed (``MigrationMapping/destinationFilters``)
    /// to objects that are not of the new destination: their foreign keys become NULL, their
    /// join-table pairs go.
    func clearLinksOutsideDestinations(_ step: MigrationStep, in schema: SQLiteSchema) throws(Connection.Failure) {
        for link in step.mapping.destinationFilters.sorted(by: { "\($0)" < "\($1)" }) {
            guard let relationship = step.new.relationship(link.relationship, of: link.entity),
                let destination = schema.table(for: relationship.destination)
            else { continue }
            var arguments = SQLArguments(dialect)
            let kinds = step.newEntities.filter { step.new.entity($0, isKindOf: relationship.destination) }
                .map { arguments.add(Dialect.text($0)) }.joined(separator: ", ")
            let members =
                "SELECT \"_pk\" FROM \(dialect.table(destination.name)) WHERE \"_entity\" IN (\(kinds.isEmpty ? "NULL" : kinds))"
            switch step.new.storage(of: link.relationship, in: link.entity) {
            case .foreignKey:
                guard let table = schema.table(for: link.entity) else { continue }
                let column = dialect.quote(step.new.columnName(of: link.relationship, in: link.entity))
                try connection.run(
                    "UPDATE \(dialect.table(table.name)) SET \(column) = NULL WHERE \(column) IS NOT NULL AND \(column) NOT IN (\(members))",
                    arguments.values)
            case .joinTable(let join, let isSource):
                let column = isSource ? "\"target\"" : "\"source\""
                try connection.run(
                    "DELETE FROM \(dialect.table(join.name)) WHERE \(column) NOT IN (\(members))", arguments.values)
            case .inverseForeignKey, nil:
                continue
            }
        }
    }

    /// What the data of `step`'s old tables, named as `oldSchema` names them, holds that the
    /// step's new model cannot: one refusal per failed check. Only reads.
    func refusals(of step: MigrationStep, oldSchema: SQLiteSchema) throws(Connection.Failure) -> [MigrationRefusal] {
        var refusals: [MigrationRefusal] = []
        for check in step.checks {
            if let refusal = try refusal(of: check, step: step, oldSchema: oldSchema) { refusals.append(refusal) }
        }
        return refusals
    }

    /// What fails `check`, or nil when it holds.
    private func refusal(
        of check: MigrationCheck, step: MigrationStep, oldSchema: SQLiteSchema
    ) throws(Connection.Failure) -> MigrationRefusal? {
        switch check {
        case .hasValue(let entity, let oldEntity, let attribute, let column):
            guard let table = oldSchema.table(for: oldEntity) else { return nil }
            guard let (count, example) = try offenders(table.name, oldEntity, "\(dialect.quote(column)) IS NULL")
            else { return nil }
            return MigrationRefusal(
                .dataDoesNotFit, entity: entity, property: attribute,
                "becomes required with no default value, and \(objects(count)) of \(entity) \(count == 1 ? "has" : "have") none (e.g. \(entity) \(example)); give it a default value in the model"
            )
        case .fits(let entity, let oldEntity, let attribute, let column, let from, let to):
            guard let table = oldSchema.table(for: oldEntity) else { return nil }
            let quoted = dialect.quote(column)
            guard
                let (count, example) = try offenders(
                    table.name, oldEntity, "\(quoted) IS NOT NULL AND \(dialect.misfits(quoted, from: from, to: to))")
            else { return nil }
            var arguments = SQLArguments(dialect)
            let value =
                try connection.texts(
                    "SELECT \(quoted) FROM \(dialect.table(table.name)) WHERE \"_pk\" = \(arguments.add(Dialect.integer(example)))",
                    arguments.values
                ).first?.first ?? nil
            return MigrationRefusal(
                .dataDoesNotFit, entity: entity, property: attribute,
                "type changes from \(from.rawValue) to \(to.rawValue), and \(count) \(count == 1 ? "value does" : "values do") not fit \(to.rawValue) (e.g. \(value ?? "?") of \(entity) \(example))"
            )
        case .atMostOneMember(let entity, let relationship, _, _), .atMostOneOwner(let entity, let relationship, _, _):
            guard let pairs = pairs(of: check, step: step, oldSchema: oldSchema) else { return nil }
            let row = try connection.texts(
                "SELECT COUNT(*), MIN(\"owner\") FROM (SELECT \"owner\" FROM (\(pairs)) AS \"pairs\" GROUP BY \"owner\" HAVING COUNT(*) > 1) AS \"many\"",
                []
            ).first
            guard let count = (row?[0]).flatMap({ Int($0) }), count > 0, let example = row?[1] ?? nil else {
                return nil
            }
            guard case .atMostOneOwner(_, _, let oldEntity, let oldRelationship) = check else {
                return MigrationRefusal(
                    .dataDoesNotFit, entity: entity, property: relationship,
                    "becomes to-one, and \(objects(count)) of \(entity) \(count == 1 ? "has" : "have") more than one member (e.g. \(entity) \(example)); a to-one holds one"
                )
            }
            return MigrationRefusal(
                .dataDoesNotFit, entity: entity, property: relationship,
                "is the new to-one inverse of \(oldEntity).\(oldRelationship), and \(objects(count)) of \(entity) \(count == 1 ? "is a member" : "are members") of more than one (e.g. \(entity) \(example)); a to-one holds one"
            )
        }
    }

    /// "1 object", "3 objects".
    private func objects(_ count: Int) -> String { count == 1 ? "1 object" : "\(count) objects" }

    /// How many objects of `entity` in old table `table` meet `condition`, and the first one's
    /// key; nil when none does.
    private func offenders(_ table: String, _ entity: String, _ condition: String) throws(Connection.Failure) -> (
        Int, Int64
    )? {
        var arguments = SQLArguments(dialect)
        let row = try connection.texts(
            "SELECT COUNT(*), MIN(\"_pk\") FROM \(dialect.table(table)) WHERE \"_entity\" = \(arguments.add(Dialect.text(entity))) AND \(condition)",
            arguments.values
        ).first
        guard let count = (row?[0]).flatMap({ Int($0) }), count > 0, let example = (row?[1]).flatMap({ Int64($0) })
        else { return nil }
        return (count, example)
    }

    /// A query of the (owner, member) pairs of the members table `check` fills.
    private func pairs(of check: MigrationCheck, step: MigrationStep, oldSchema: SQLiteSchema) -> String? {
        guard let members = check.members,
            let pairs = pairs(of: members.oldRelationship, in: members.oldEntity, step: step, oldSchema: oldSchema)
        else { return nil }
        guard members.reversed else { return pairs }
        return "SELECT \"member\" AS \"owner\", \"owner\" AS \"member\" FROM (\(pairs)) AS \"turned\""
    }

    /// A query of the (owner, member) pairs of old relationship `relationship` of `entity`, read
    /// from how the old model stores it: its own column, its inverse's, or its join table.
    private func pairs(of relationship: String, in entity: String, step: MigrationStep, oldSchema: SQLiteSchema)
        -> String?
    {
        switch step.old.storage(of: relationship, in: entity) {
        case .inverseForeignKey(let inverse):
            guard let destination = step.old.relationship(relationship, of: entity)?.destination,
                let table = oldSchema.table(for: destination)
            else { return nil }
            let column = dialect.quote(step.old.columnName(of: inverse, in: destination))
            return
                "SELECT \(column) AS \"owner\", \"_pk\" AS \"member\" FROM \(dialect.table(table.name)) WHERE \(column) IS NOT NULL"
        case .joinTable(let join, let isSource):
            let (owner, member) = isSource ? ("\"source\"", "\"target\"") : ("\"target\"", "\"source\"")
            return "SELECT \(owner) AS \"owner\", \(member) AS \"member\" FROM \(dialect.table(join.name))"
        case .foreignKey:
            guard let table = oldSchema.table(for: entity) else { return nil }
            let column = dialect.quote(step.old.columnName(of: relationship, in: entity))
            let kinds = step.oldEntities.filter { step.old.entity($0, isKindOf: entity) }
                .map { "'\($0.replacingOccurrences(of: "'", with: "''"))'" }.joined(separator: ", ")
            return
                "SELECT \"_pk\" AS \"owner\", \(column) AS \"member\" FROM \(dialect.table(table.name)) WHERE \(column) IS NOT NULL AND \"_entity\" IN (\(kinds.isEmpty ? "NULL" : kinds))"
        case nil:
            return nil
        }
    }
}
