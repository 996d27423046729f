"""ROS 2 shell around the simulator: the only subpackage that imports rclpy."""
