"""Print the `msg` of one task for every host from ansible.posix.json output on stdin (the
demo shows a multi-line status whole, not its first line)."""
import json
import sys


def messages(data, task_name):
    for play in data.get("plays", []):
        for task in play.get("tasks", []):
            if task["task"]["name"] == task_name:
                for host, result in task["hosts"].items():
                    yield host, str(result.get("msg", ""))


if __name__ == "__main__":
    for _host, text in messages(json.load(sys.stdin), sys.argv[1]):
        print(text)
