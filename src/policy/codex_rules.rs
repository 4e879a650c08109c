//! Reading Codex's execpolicy `.rules` files for `xdev policy import`:
//! exactly the shape those files take, a sequence of
//! `prefix_rule(pattern = [...], decision = "...", justification = "...",
//! match = [...], not_match = [...])` calls whose values are string
//! literals and lists of them. This is not Starlark: anything else (a
//! variable, a function definition, a `load`, an expression) is refused
//! with its line, never guessed at. A Starlark interpreter (the `starlark`
//! crate) would run what a rules file could hold, which is more than this
//! import may trust or needs.

use super::Effect;
use crate::texts;

/// One `prefix_rule(...)` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PrefixRule {
    /// The line the call starts on.
    pub(crate) line: usize,
    /// The pattern: per argument position, its alternatives (a string
    /// element is one alternative).
    pub(crate) pattern: Vec<Vec<String>>,
    /// `allow` (the default), `prompt` (ask) or `forbidden` (deny).
    pub(crate) effect: Effect,
    /// `justification`, if given.
    pub(crate) justification: Option<String>,
    /// `match` examples, each a command line (a token list joined).
    pub(crate) matches: Vec<Example>,
    /// `not_match` examples.
    pub(crate) not_matches: Vec<Example>,
}

/// An example as the file writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Example {
    /// A command line.
    Line(String),
    /// Tokens (argv).
    Tokens(Vec<String>),
}

/// Why a rules file cannot be read: its line and what was found there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    /// 1-based.
    pub(crate) line: usize,
    /// What is wrong, in one phrase.
    pub(crate) what: String,
}

/// A literal value.
#[derive(Debug, Clone, PartialEq)]
enum Literal {
    Text(String),
    List(Vec<Literal>),
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Name(String),
    Text(String),
    Open(char),
    Close(char),
    Comma,
    Equals,
}

/// Reads every `prefix_rule` call of `text`.
pub(crate) fn parse(text: &str) -> Result<Vec<PrefixRule>, SyntaxError> {
    let tokens = tokenize(text)?;
    let mut reader = Reader { tokens, at: 0 };
    let mut rules = Vec::new();
    while let Some((line, token)) = reader.next() {
        match token {
            Token::Name(name) if name == "prefix_rule" => rules.push(reader.call(line)?),
            other => {
                return Err(SyntaxError {
                    line,
                    what: texts::codex_rules_unexpected(&describe(&other)),
                })
            }
        }
    }
    Ok(rules)
}

fn describe(token: &Token) -> String {
    match token {
        Token::Name(name) => format!("`{name}`"),
        Token::Text(text) => format!("the string {text:?}"),
        Token::Open(c) | Token::Close(c) => format!("`{c}`"),
        Token::Comma => "`,`".into(),
        Token::Equals => "`=`".into(),
    }
}

struct Reader {
    tokens: Vec<(usize, Token)>,
    at: usize,
}

impl Reader {
    fn next(&mut self) -> Option<(usize, Token)> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at).map(|(_, token)| token)
    }

    /// The next token, which must be `want`.
    fn expect(&mut self, want: &Token, after: usize) -> Result<(), SyntaxError> {
        match self.next() {
            Some((_, token)) if &token == want => Ok(()),
            Some((line, token)) => Err(SyntaxError {
                line,
                what: texts::codex_rules_expected(&describe(want), &describe(&token)),
            }),
            None => Err(SyntaxError {
                line: after,
                what: texts::codex_rules_ends_early(&describe(want)),
            }),
        }
    }

    /// `(name = value, ...)` after `prefix_rule`.
    fn call(&mut self, line: usize) -> Result<PrefixRule, SyntaxError> {
        self.expect(&Token::Open('('), line)?;
        let mut rule = PrefixRule {
            line,
            pattern: Vec::new(),
            effect: Effect::Allow,
            justification: None,
            matches: Vec::new(),
            not_matches: Vec::new(),
        };
        let mut seen: Vec<String> = Vec::new();
        loop {
            let (at, token) = self.next().ok_or(SyntaxError {
                line,
                what: texts::codex_rules_ends_early("`)`"),
            })?;
            let name = match token {
                Token::Close(')') => break,
                Token::Name(name) => name,
                other => {
                    return Err(SyntaxError {
                        line: at,
                        what: texts::codex_rules_expected("an argument's name", &describe(&other)),
                    })
                }
            };
            if seen.contains(&name) {
                return Err(SyntaxError {
                    line: at,
                    what: texts::codex_rules_twice(&name),
                });
            }
            self.expect(&Token::Equals, at)?;
            let value = self.value(at)?;
            apply(&mut rule, &name, value, at)?;
            seen.push(name);
            match self.peek() {
                Some(Token::Comma) => {
                    self.at += 1;
                }
                Some(Token::Close(')')) => {}
                _ => {
                    let (at, token) = self.next().ok_or(SyntaxError {
                        line,
                        what: texts::codex_rules_ends_early("`)`"),
                    })?;
                    return Err(SyntaxError {
                        line: at,
                        what: texts::codex_rules_expected("`,` or `)`", &describe(&token)),
                    });
                }
            }
        }
        if rule.pattern.is_empty() {
            return Err(SyntaxError {
                line,
                what: texts::CODEX_RULES_NO_PATTERN.into(),
            });
        }
        Ok(rule)
    }

    /// A string or a list of values.
    fn value(&mut self, line: usize) -> Result<Literal, SyntaxError> {
        match self.next() {
            Some((_, Token::Text(text))) => Ok(Literal::Text(text)),
            Some((_, Token::Open('['))) => {
                let mut items = Vec::new();
                loop {
                    if self.peek() == Some(&Token::Close(']')) {
                        self.at += 1;
                        return Ok(Literal::List(items));
                    }
                    items.push(self.value(line)?);
                    match self.next() {
                        Some((_, Token::Comma)) => {}
                        Some((_, Token::Close(']'))) => return Ok(Literal::List(items)),
                        Some((at, token)) => {
                            return Err(SyntaxError {
                                line: at,
                                what: texts::codex_rules_expected("`,` or `]`", &describe(&token)),
                            })
                        }
                        None => {
                            return Err(SyntaxError {
                                line,
                                what: texts::codex_rules_ends_early("`]`"),
                            })
                        }
                    }
                }
            }
            Some((at, token)) => Err(SyntaxError {
                line: at,
                what: texts::codex_rules_expected("a string or a list", &describe(&token)),
            }),
            None => Err(SyntaxError {
                line,
                what: texts::codex_rules_ends_early("a value"),
            }),
        }
    }
}

/// Sets the argument `name` of `rule`.
fn apply(
    rule: &mut PrefixRule,
    name: &str,
    value: Literal,
    line: usize,
) -> Result<(), SyntaxError> {
    let wrong = |what: &str| SyntaxError {
        line,
        what: texts::codex_rules_wrong_value(name, what),
    };
    match (name, value) {
        ("pattern", Literal::List(elements)) if !elements.is_empty() => {
            for element in elements {
                let alternatives = match element {
                    Literal::Text(text) => vec![text],
                    Literal::List(items) if !items.is_empty() => strings(items)
                        .ok_or_else(|| wrong("a list of strings and lists of strings"))?,
                    Literal::List(_) => return Err(wrong("a list with no empty list in it")),
                };
                rule.pattern.push(alternatives);
            }
        }
        ("pattern", _) => return Err(wrong("a list that is not empty")),
        ("decision", Literal::Text(decision)) => {
            rule.effect = match decision.as_str() {
                "allow" => Effect::Allow,
                "prompt" => Effect::Ask,
                "forbidden" => Effect::Deny,
                _ => return Err(wrong("\"allow\", \"prompt\" or \"forbidden\"")),
            }
        }
        ("justification", Literal::Text(text)) => rule.justification = Some(text),
        ("match" | "not_match", Literal::List(items)) => {
            let mut examples = Vec::new();
            for item in items {
                examples.push(match item {
                    Literal::Text(line) => Example::Line(line),
                    Literal::List(tokens) => Example::Tokens(
                        strings(tokens).ok_or_else(|| wrong("a list of strings or token lists"))?,
                    ),
                });
            }
            if name == "match" {
                rule.matches = examples;
            } else {
                rule.not_matches = examples;
            }
        }
        ("decision" | "justification", _) => return Err(wrong("a string")),
        ("match" | "not_match", _) => return Err(wrong("a list")),
        _ => {
            return Err(SyntaxError {
                line,
                what: texts::codex_rules_unknown_argument(name),
            })
        }
    }
    Ok(())
}

fn strings(items: Vec<Literal>) -> Option<Vec<String>> {
    items
        .into_iter()
        .map(|item| match item {
            Literal::Text(text) => Some(text),
            Literal::List(_) => None,
        })
        .collect()
}

/// The file's tokens, each with its line; comments (`#` to the end of the
/// line) dropped.
fn tokenize(text: &str) -> Result<Vec<(usize, Token)>, SyntaxError> {
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let token = match c {
            '\n' => {
                line += 1;
                continue;
            }
            c if c.is_whitespace() => continue,
            '#' => {
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
                continue;
            }
            '(' | '[' => Token::Open(c),
            ')' | ']' => Token::Close(c),
            ',' => Token::Comma,
            '=' => Token::Equals,
            '"' | '\'' => Token::Text(string(c, &mut chars, line)?),
            c if c.is_ascii_alphabetic() || c == '_' => {
                let mut name = c.to_string();
                while let Some(&next) = chars.peek() {
                    if !(next.is_ascii_alphanumeric() || next == '_') {
                        break;
                    }
                    name.push(next);
                    chars.next();
                }
                Token::Name(name)
            }
            other => {
                return Err(SyntaxError {
                    line,
                    what: texts::codex_rules_unexpected(&format!("`{other}`")),
                })
            }
        };
        tokens.push((line, token));
    }
    Ok(tokens)
}

/// A string literal's rest after its opening `quote`: one line, the
/// escapes `\\ \" \' \n \t`; a triple-quoted or raw string is refused.
fn string(
    quote: char,
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    line: usize,
) -> Result<String, SyntaxError> {
    let refuse = |what: &str| SyntaxError {
        line,
        what: what.to_string(),
    };
    let mut text = String::new();
    loop {
        match chars.next() {
            None | Some('\n') => return Err(refuse(texts::CODEX_RULES_OPEN_STRING)),
            Some(c) if c == quote => {
                if text.is_empty() && chars.peek() == Some(&quote) {
                    return Err(refuse(texts::CODEX_RULES_TRIPLE_QUOTE));
                }
                return Ok(text);
            }
            Some('\\') => match chars.next() {
                Some('\\') => text.push('\\'),
                Some('"') => text.push('"'),
                Some('\'') => text.push('\''),
                Some('n') => text.push('\n'),
                Some('t') => text.push('\t'),
                _ => return Err(refuse(texts::CODEX_RULES_ESCAPE)),
            },
            Some(c) => text.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_documented_shape() {
        let rules = parse(
            "# Prompt before gh pr view.\n\
             prefix_rule(\n\
                 pattern = [\"gh\", \"pr\", [\"view\", \"list\"]],  # the prefix\n\
                 decision = 'prompt',\n\
                 justification = \"PRs are \\\"private\\\"\",\n\
                 match = [\"gh pr view 7888\", [\"gh\", \"pr\", \"list\"]],\n\
                 not_match = [\"gh pr --repo x view 1\"],\n\
             )\n\
             prefix_rule(pattern = [\"git\", \"status\"])\n",
        )
        .expect("parses");
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].line, 2);
        assert_eq!(
            rules[0].pattern,
            vec![
                vec!["gh".to_string()],
                vec!["pr".to_string()],
                vec!["view".to_string(), "list".to_string()]
            ]
        );
        assert_eq!(rules[0].effect, Effect::Ask);
        assert_eq!(
            rules[0].justification.as_deref(),
            Some("PRs are \"private\"")
        );
        assert_eq!(
            rules[0].matches[1],
            Example::Tokens(vec!["gh".into(), "pr".into(), "list".into()])
        );
        assert_eq!(rules[1].effect, Effect::Allow);
        assert_eq!(rules[1].line, 9);
    }

    #[test]
    fn anything_else_is_refused_with_its_line() {
        let cases = [
            ("x = 1\n", 1),
            ("prefix_rule(pattern = [\"a\"])\nload(\"x\")\n", 2),
            ("prefix_rule(\n pattern = PATTERN,\n)", 2),
            ("prefix_rule(pattern = [\"a\"], decision = \"maybe\")", 1),
            ("prefix_rule(pattern = [\"a\"], host = \"x\")", 1),
            ("prefix_rule(decision = \"allow\")", 1),
            ("prefix_rule(pattern = [])", 1),
            ("prefix_rule(pattern = [\"a\"]", 1),
            ("prefix_rule(pattern = [\"a\" + \"b\"])", 1),
            ("prefix_rule(pattern = [\"\"\"a\"\"\"])", 1),
            ("\n\nprefix_rule(pattern = [\"a\\x41\"])", 3),
        ];
        for (text, line) in cases {
            let error = parse(text).expect_err(text);
            assert_eq!(error.line, line, "{text}: {}", error.what);
        }
    }
}
