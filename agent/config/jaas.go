package config

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Login modules of sasl.jaas.config that StoatFlow understands.
const (
	PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// JAAS is a parsed sasl.jaas.config entry.
type JAAS struct {
	Module   string
	Username string
	Password string
}

// ParseJAAS reads one Kafka JAAS entry:
//
//	<login module class> required username="u" password="p";
//
// Option values may be quoted (with \" and \\ escapes) or bare words; the
// control flag may be required, requisite, sufficient or optional. sasl.jaas.config is
// secret: an error says what is wrong and where, never a piece of the text.
func ParseJAAS(s string) (JAAS, error) {
	toks, err := jaasTokens(s)
	if err != nil {
		return JAAS{}, err
	}
	if len(toks) == 0 || toks[0].quoted {
		return JAAS{}, fmt.Errorf("expected a login module class, as in %s required username=\"u\" password=\"p\";", PlainLoginModule)
	}
	j := JAAS{Module: toks[0].text}
	if len(toks) < 2 || toks[1].quoted {
		return JAAS{}, errors.New("expected a control flag (required) after the login module")
	}
	switch toks[1].text {
	case "required", "requisite", "sufficient", "optional":
	default:
		return JAAS{}, fmt.Errorf("invalid control flag after the login module: expected required, requisite, sufficient or optional")
	}
	rest := toks[2:]
	if len(rest) == 0 || rest[len(rest)-1].text != ";" || rest[len(rest)-1].quoted {
		return JAAS{}, fmt.Errorf(`expected ";" at the end`)
	}
	rest = rest[:len(rest)-1]
	for n := 1; len(rest) > 0; n++ {
		if len(rest) < 3 || rest[0].quoted || rest[1].text != "=" || rest[1].quoted {
			return JAAS{}, fmt.Errorf("expected option=value pairs after the control flag (option %d is not one)", n)
		}
		switch rest[0].text {
		case "username":
			j.Username = rest[2].text
		case "password":
			j.Password = rest[2].text
		}
		rest = rest[3:]
	}
	if j.Username == "" || j.Password == "" {
		return JAAS{}, fmt.Errorf("expected username and password options")
	}
	return j, nil
}

type jaasToken struct {
	text   string
	quoted bool
}

func jaasTokens(s string) ([]jaasToken, error) {
	var toks []jaasToken
	r := []rune(s)
	for i := 0; i < len(r); {
		c := r[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '=' || c == ';':
			toks = append(toks, jaasToken{text: string(c)})
			i++
		case c == '"':
			var b strings.Builder
			i++
			for ; i < len(r) && r[i] != '"'; i++ {
				if r[i] == '\\' && i+1 < len(r) {
					i++
				}
				b.WriteRune(r[i])
			}
			if i >= len(r) {
				return nil, fmt.Errorf("unterminated quoted value")
			}
			i++
			toks = append(toks, jaasToken{text: b.String(), quoted: true})
		default:
			start := i
			for i < len(r) && !unicode.IsSpace(r[i]) && r[i] != '=' && r[i] != ';' && r[i] != '"' {
				i++
			}
			toks = append(toks, jaasToken{text: string(r[start:i])})
		}
	}
	return toks, nil
}
