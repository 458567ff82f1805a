import Foundation
import Strata

/// Writes a fetch request template as a static function of its entity's struct, with one
/// parameter per `$VARIABLE`, typed from what the variable is compared with.
///
/// A variable compared with an attribute takes the attribute's Swift type (`year > $YEAR`:
/// `Int32`); with a to-one relationship or `SELF`, the destination's struct; with `@count`,
/// `Int64`; the right side of `IN` takes an array of the left side's type, each bound of
/// `BETWEEN` its type. A variable used with different types, or in a way the predicate does not
/// say the type of, takes a `PredicateArgument`.
struct TemplateEmitter {
    let context: GenerationContext
    let template: FetchRequestTemplate
    let swiftName: String

    /// What a variable is compared with.
    indirect enum VariableType: Equatable {
        case attribute(AttributeType)
        case object(String)
        case list(VariableType)
        case untyped
    }

    func emit(into out: inout SwiftWriter) {
        let typeName = context.typeName(template.entity)
        let text = template.predicate.trimmingCharacters(in: .whitespacesAndNewlines)
        var predicate: FetchPredicate? = nil
        if !text.isEmpty {
            do {
                predicate = try FetchPredicate(format: text)
            } catch {
                out.line("// Fetch request template \(context.literal(template.name)) is left out: \(error.message)")
                return
            }
        }
        let variables = predicate?.variableNames ?? []
        let types = predicate.map { variableTypes($0) } ?? [:]
        var names = MemberNames(reserved: [])
        let parameters = variables.map { (variable: $0, name: names.claim($0), type: types[$0] ?? .untyped) }
        var lines: [String] = []
        if let documentation = template.documentation, !documentation.isEmpty { lines += [documentation, ""] }
        lines.append(
            "Fetch request template `\(template.name)`: the `\(template.entity)` objects matching "
                + "`\(text.isEmpty ? "TRUEPREDICATE" : text)`.")
        out.doc(lines.joined(separator: "\n"))
        let signature = parameters.map { "\(SwiftNames.escaped($0.name)): \(swiftType($0.type))" }.joined(
            separator: ", ")
        out.block(
            "\(context.access)static func \(SwiftNames.escaped(swiftName))(\(signature)) -> \(context.runtime).TypedFetchRequest<\(typeName)>"
        ) { out in
            let arguments = parameters.map {
                "\(context.literal($0.variable)): \(argument(SwiftNames.escaped($0.name), $0.type))"
            }
            out.line(
                "\(context.runtime).TypedFetchRequest(template: \(context.literal(template.name)), format: \(context.literal(text)), substituting: [\(arguments.isEmpty ? ":" : arguments.joined(separator: ", "))])"
            )
        }
    }

    private func swiftType(_ type: VariableType) -> String {
        switch type {
        case .attribute(let attribute): context.swiftType(of: attribute)
        case .object(let entity): context.typeName(entity)
        case .list(let element): "[\(swiftType(element))]"
        case .untyped: "\(context.runtime).PredicateArgument"
        }
    }

    /// The `PredicateArgument` expression for parameter `name` of `type`.
    private func argument(_ name: String, _ type: VariableType) -> String {
        switch type {
        case .attribute: ".value(\(name).attributeValue)"
        case .object: ".object(\(name).objectID)"
        case .list(let element): ".list(\(name).map { \(argument("$0", element)) })"
        case .untyped: name
        }
    }

    /// The type of each variable of `predicate` that is compared in a way that says it.
    func variableTypes(_ predicate: FetchPredicate) -> [String: VariableType] {
        var found: [String: VariableType] = [:]
        func note(_ name: String, _ type: VariableType) {
            if let known = found[name], known != type { found[name] = .untyped } else { found[name] = type }
        }
        func visit(_ comparison: Comparison) {
            for (path, other) in [(comparison.lhs, comparison.rhs), (comparison.rhs, comparison.lhs)] {
                guard case .keyPath(let keyPath) = path else { continue }
                let type = pathType(keyPath) ?? .untyped
                switch (comparison.op, other) {
                case (.in, .variable(let name)): note(name, type == .untyped ? .untyped : .list(type))
                case (_, .variable(let name)): note(name, type)
                case (_, .list(let items)):
                    for case .variable(let name) in items { note(name, type) }
                default: break
                }
            }
        }
        func visit(_ predicate: FetchPredicate) {
            switch predicate {
            case .always, .never, .textSearch: break
            case .and(let items), .or(let items): items.forEach(visit)
            case .not(let item): visit(item)
            case .comparison(let comparison): visit(comparison)
            }
        }
        visit(predicate)
        return found.filter { !$0.key.contains(".") }
    }

    /// What key path `path` from the template's entity reads.
    func pathType(_ path: String) -> VariableType? {
        let model = context.model
        var entity = template.entity
        let parts = path.split(separator: ".").map(String.init)
        for (index, part) in parts.enumerated() {
            let last = index == parts.count - 1
            if part == "SELF" && index == 0 {
                if last { return .object(entity) }
                continue
            }
            if part == "@count" { return last ? .attribute(.integer64) : nil }
            if let attribute = model.attribute(part, of: entity) {
                return last && !attribute.isComposite ? .attribute(attribute.type) : nil
            }
            guard let relationship = model.relationship(part, of: entity) else { return nil }
            if last { return relationship.isToMany ? nil : .object(relationship.destination) }
            entity = relationship.destination
        }
        return nil
    }
}
