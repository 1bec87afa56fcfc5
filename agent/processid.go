package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/state"
)

// processFile keeps the agent's process id in its application's state directory, under
// Kafka Streams' name and in its format (StateDirectory#initializeProcessId: the JSON
// {"processId":"<UUID>"}, fields added later ignored), so that a restarted agent keeps its
// identity in its streams group (the broker keeps assignments sticky by process and puts a
// task's standby copies on other processes than its active one), and an agent given a
// Kafka Streams instance's state directory keeps that instance's id.
const processFile = "kafka-streams-process-metadata"

// uuidForm is a UUID as java.util.UUID writes it, the only form Kafka Streams reads back.
var uuidForm = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

type processMetadata struct {
	ProcessID *string `json:"processId"`
}

// maxProcessFileBytes bounds what is read of the process file: Kafka Streams writes one
// UUID in a small JSON object, so a larger file is not one it wrote, and a huge one (a 10 GB
// sparse file) is never read whole.
const maxProcessFileBytes = 64 << 10

// keepProcessID reads the process id kept in the application's state directory dir (which the
// agent holds locked), or makes one and keeps it there when there is none: as Kafka
// Streams, a file it cannot read (as JSON, or at all when over maxProcessFileBytes) is
// replaced, with a warning. A path that is not a regular file (a FIFO, whose opening would
// wait for a writer, a directory, a device) is an error naming it, never opened for reading.
func (a *Agent) keepProcessID(dir string) (string, error) {
	path := filepath.Join(dir, processFile)
	b, err := config.ReadFile(path, maxProcessFileBytes)
	switch {
	case err == nil:
		var md processMetadata
		err := json.Unmarshal(b, &md)
		if err == nil && (md.ProcessID == nil || !uuidForm.MatchString(*md.ProcessID)) {
			err = errors.New("its processId is not a UUID")
		}
		if err == nil {
			a.log.Info("process id read from the state directory", "process id", *md.ProcessID, "file", path)
			return *md.ProcessID, nil
		}
		a.log.Warn("the process id file cannot be read; making a new process id", "file", path, "err", err)
	case errors.Is(err, config.ErrTooLarge):
		a.log.Warn("the process id file is too large to be one; making a new process id", "file", path, "err", err)
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("process id file %s: %w", path, err)
	}
	id := kafkaio.RandomUUID()
	b, err = json.Marshal(processMetadata{ProcessID: &id})
	if err != nil {
		return "", err
	}
	// Written whole and synced before it replaces the old one: a crash never leaves half
	// a file, nor an empty one that would cost the agent its process id.
	if err := state.WriteFileSynced(dir, processFile, b, 0o640); err != nil {
		return "", fmt.Errorf("process id: %w", err)
	}
	a.log.Info("no process id in the state directory; made a new one", "process id", id, "file", path)
	return id, nil
}
