//! Each grammar's node kinds: which are definitions, which are transparent wrappers, and how a
//! qualified name is joined — the only part of syntax chunking that differs by language.

use super::Language;

pub(super) struct Grammar {
    pub(super) defs: &'static [&'static str],
    pub(super) transparent: &'static [&'static str],
    pub(super) separator: &'static str,
}

pub(super) fn ts_language(lang: Language) -> Option<tree_sitter::Language> {
    Some(match lang {
        Language::Rust => tree_sitter_rust::LANGUAGE.into(),
        Language::Python => tree_sitter_python::LANGUAGE.into(),
        Language::Go => tree_sitter_go::LANGUAGE.into(),
        Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
        Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
        Language::Java => tree_sitter_java::LANGUAGE.into(),
        Language::C => tree_sitter_c::LANGUAGE.into(),
        Language::Cpp => tree_sitter_cpp::LANGUAGE.into(),
        Language::Markdown | Language::Other => return None,
    })
}

const JS_DEFS: &[&str] = &[
    "function_declaration",
    "generator_function_declaration",
    "class_declaration",
    "method_definition",
    "export_statement",
    "lexical_declaration",
    "variable_declaration",
];
const TS_DEFS: &[&str] = &[
    "function_declaration",
    "generator_function_declaration",
    "class_declaration",
    "abstract_class_declaration",
    "method_definition",
    "method_signature",
    "abstract_method_signature",
    "export_statement",
    "lexical_declaration",
    "variable_declaration",
    "interface_declaration",
    "type_alias_declaration",
    "enum_declaration",
    "module",
    "internal_module",
    "function_signature",
    "ambient_declaration",
];
const C_DEFS: &[&str] = &[
    "function_definition",
    "struct_specifier",
    "union_specifier",
    "enum_specifier",
    "type_definition",
    "preproc_function_def",
];
const CPP_DEFS: &[&str] = &[
    "function_definition",
    "struct_specifier",
    "union_specifier",
    "enum_specifier",
    "type_definition",
    "preproc_function_def",
    "class_specifier",
    "namespace_definition",
    "template_declaration",
];
const C_TRANSPARENT: &[&str] = &[
    "preproc_ifdef",
    "preproc_if",
    "preproc_else",
    "preproc_elif",
    "linkage_specification",
    "declaration_list",
];

pub(super) fn grammar(lang: Language) -> Grammar {
    match lang {
        Language::Rust => Grammar {
            defs: &[
                "function_item",
                "function_signature_item",
                "impl_item",
                "struct_item",
                "enum_item",
                "union_item",
                "trait_item",
                "mod_item",
                "macro_definition",
                "type_item",
                "const_item",
                "static_item",
            ],
            transparent: &[],
            separator: "::",
        },
        Language::Python => Grammar {
            defs: &[
                "function_definition",
                "class_definition",
                "decorated_definition",
            ],
            transparent: &[],
            separator: ".",
        },
        Language::Go => Grammar {
            defs: &[
                "function_declaration",
                "method_declaration",
                "type_declaration",
            ],
            transparent: &[],
            separator: ".",
        },
        Language::JavaScript => Grammar {
            defs: JS_DEFS,
            transparent: &[],
            separator: ".",
        },
        Language::TypeScript | Language::Tsx => Grammar {
            defs: TS_DEFS,
            transparent: &[],
            separator: ".",
        },
        Language::Java => Grammar {
            defs: &[
                "class_declaration",
                "interface_declaration",
                "enum_declaration",
                "record_declaration",
                "annotation_type_declaration",
                "method_declaration",
                "constructor_declaration",
            ],
            transparent: &[],
            separator: ".",
        },
        Language::C => Grammar {
            defs: C_DEFS,
            transparent: C_TRANSPARENT,
            separator: "::",
        },
        Language::Cpp | Language::Markdown | Language::Other => Grammar {
            defs: CPP_DEFS,
            transparent: C_TRANSPARENT,
            separator: "::",
        },
    }
}
