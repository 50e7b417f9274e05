// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file text.hpp
/// The text IR of gpass (`.gir` files): `gpass::write_text`, `gpass::print_text`,
/// `gpass::parse_text`, `gpass::read_text_file`.
///
/// Printing and parsing round-trip exactly: `parse_text(print_text(g))` equals `g` (nodes in
/// the same order, same names, ops, domains, attributes, devices, output types, input ports
/// and edges, control edges, graph attributes and functions), and printing it again gives
/// the same bytes. Example:
/// \code
///   # comment to end of line
///   graph {name = "main"} {
///     %x = Placeholder() {dtype = f32, shape = shape[2,?]} -> (f32[2,?])
///     %y:2 = Split(%x) {axis = 0}
///     %z = Add(%y:0, %y:1, ^%x) on "/device:CPU:0"
///     %w = com.microsoft::FusedConv(%z, _, %x)
///     %loop = while(%x) {body = @body_0, cond = @cond_0} -> (f32[2,?])
///     %r:0 = return(%w, %loop)
///   }
///
///   func @body_0 {
///     %args = function_entry() -> (f32[2,?])
///     %one = Const() {value = tensor<f32[]> [1.0]}
///     %n = Add(%args, %one)
///     %ret:0 = return(%n)
///   }
/// \endcode
///
/// Grammar (whitespace and newlines separate tokens and are otherwise insignificant;
/// `#` starts a comment to the end of the line):
/// \verbatim
///   file      := (graph | func)*            exactly one graph; functions in any order
///   graph     := 'graph' attrdict? '{' node* '}'
///   func      := 'func' FUNC attrdict? '{' node* '}'   a function of the top graph's library
///   node      := NODE (':' INT)? '=' op '(' (input (',' input)*)? ')' attrdict?
///                ('on' STRING)? ('->' '(' (type (',' type)*)? ')')?
///   op        := NAME ('::' NAME)?          domain::op; NAME is IDENT or STRING
///   input     := NODE (':' INT)?            data input from an output port (default 0)
///              | '_'                        an empty (omitted optional) input port
///              | '^' NODE                   a control input
///   attrdict  := '{' (NAME '=' value (',' NAME '=' value)*)? '}'
///   value     := INT | FLOAT | STRING | 'true' | 'false' | dtype | 'shape' shape
///              | 'type' '<' type '>' | FUNC | tensor
///              | '[' scalar (',' scalar)* ']'   all elements of one kind; no nested lists
///              | KIND '[' ']'               empty list: ints floats strings bools dtypes
///                                           shapes types tensors funcs
///   tensor    := 'tensor' '<' dtype shape '>' '[' (element (',' element)*)? ']'
///                                           the shape is fully known; elements flattened
///                                           row-major: ints, floats, strings, true/false,
///                                           complex as '(' re ',' im ')'; '?' dtype: none
///   type      := '?'                        unknown
///              | dtype shape                f32[2,3], f32[] (scalar), f32[*], ?[2]
///              | 'list' '<' dtype shape ',' dim (',' 'like' NODE (':' INT)?)? '>'
///              | 'tuple' '<' (type (',' type)*)? '>'     nested at most 64 deep
///   shape     := '[' '*' ']' | '[' (dim (',' dim)*)? ']'
///   dim       := '?' | affine               affine: 4, n, 2*n, n+1, 2*n+m-3 (as dim::to_string)
///   dtype     := '?' | f32 | f64 | f16 | bf16 | i8 ... i64 | u8 ... u64 | bool | str | c64 | c128
///                | resource | variant
///   FLOAT     := shortest round-trip decimal, always with '.' or an exponent (1.0, 2.5e-07),
///                or inf, -inf, nan, -nan, nan(0xBITS) (any other NaN, by its bits)
///   NODE      := '%' [A-Za-z0-9_./-]+ | '%' STRING
///   FUNC      := '@' [A-Za-z0-9_./-]+ | '@' STRING
///   IDENT     := [A-Za-z_][A-Za-z0-9_.]*    ops, domains, attribute names, dim symbols
///   STRING    := '"' ... '"'                escapes \" \\ \n \t \r \0 \xHH
/// \endverbatim
///
/// A node `%x:N` has N output ports (default 1, or the length of its `->` list); the
/// printer writes `:N` when N is not 1, `%y:k` on inputs when `y` has several outputs or
/// k is not 0, and omits `->` when every output type is unknown. Inputs may name nodes
/// defined later in the same block (TF v1 loops are cyclic). Names that are not bare
/// (node/function names outside `[A-Za-z0-9_./-]+`, other names that are not identifiers)
/// print as quoted strings. Functions live in one flat namespace: the printer throws
/// `gpass::error` when a function has a function library of its own. Not part of the
/// format: typed graph attributes (`attr_key`), extra members of user node types.
///
/// Parser limits (hostile input gets an error, never a crash): tuple types nest at most
/// 64 deep; a node has at most 65536 outputs; outputs declared by a count alone total at
/// most 2^20 plus the input size; numbers must fit their type (int64 for ints and dims,
/// the element type in tensors); a dim names each symbol once. Errors carry the source
/// name, line and column (1-based, in bytes).

#include <gpass/io/text_parser.hpp>
#include <gpass/io/text_printer.hpp>
