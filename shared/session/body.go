package session

import "github.com/cloud-agent/control-plane/shared/problem"

// RepositoryBody is a repository object as a body sends it.
type RepositoryBody struct {
	Type   *string `json:"type"`
	Repo   *string `json:"repo"`
	URL    *string `json:"url"`
	Branch *string `json:"branch"`
}

// ParseRepository reads a repository object, the member at name: github
// takes repo, gitlab and git take url, and no other of the two.
func ParseRepository(m *problem.Members, name string, b *RepositoryBody) Repository {
	var rep Repository
	rep.Type = m.Required(name+".type", b.Type)
	switch rep.Type {
	case "github":
		rep.Repo = m.Required(name+".repo", b.Repo)
		if b.URL != nil {
			m.Fail(name+".url", "is not a member of a github repository")
		}
	case "gitlab", "git":
		rep.URL = m.Required(name+".url", b.URL)
		if b.Repo != nil {
			m.Fail(name+".repo", "is not a member of a "+rep.Type+" repository")
		}
	case "":
	default:
		m.Fail(name+".type", "must be github, gitlab or git")
	}
	rep.Branch = m.Optional(name+".branch", b.Branch)
	return rep
}

// AgentBody is an agent object as a body sends it.
type AgentBody struct {
	Mode    *string `json:"mode"`
	Model   *string `json:"model"`
	Variant *string `json:"variant"`
}

// ParseAgent reads an agent object, the member at name.
func ParseAgent(m *problem.Members, name string, b *AgentBody) Agent {
	return Agent{
		Mode:    m.Required(name+".mode", b.Mode),
		Model:   m.Required(name+".model", b.Model),
		Variant: m.Optional(name+".variant", b.Variant),
	}
}
